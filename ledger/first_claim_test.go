package ledger_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/ledger"
)

// statementLog is a pool that remembers the ledger statements sent.
type statementLog struct {
	*pgxpool.Pool
	mu    sync.Mutex
	names []string
}

func (d *statementLog) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	d.note(sql)
	return d.Pool.QueryRow(ctx, sql, args...)
}

func (d *statementLog) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	d.note(sql)
	return d.Pool.Query(ctx, sql, args...)
}

func (d *statementLog) note(sql string) {
	if i := strings.Index(sql, "/* ledger."); i >= 0 {
		name, _, _ := strings.Cut(sql[i+len("/* "):], " ")
		d.mu.Lock()
		d.names = append(d.names, name)
		d.mu.Unlock()
	}
}

// all returns the names sent so far, oldest first.
func (d *statementLog) all() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.names...)
}

func (d *statementLog) sent() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	s := strings.Join(d.names, " ")
	d.names = nil
	return s
}

// leased is a context whose lease deadline, as a worker keeps it, holds
// for a minute.
func leased() (context.Context, *agentledger.LeaseDeadline) {
	d := new(agentledger.LeaseDeadline)
	d.Set(time.Now().Add(time.Minute))
	return agentledger.WithLeaseDeadline(context.Background(), d), d
}

// On its generation's first claim, within its lease deadline, an attempt
// performs a keyed effect without the look-up before it (there is no row
// to find), and a pure one with it; the record is written either way. A
// later claim — a replay — looks up and is served. Should the first
// attempt call the same step twice, the second looks up as a replay
// would: served, or refused before it is sent if its request differs.
// Without a deadline (no worker runs the call) the look-up is made.
func TestFirstClaimSkipsTheLookup(t *testing.T) {
	t.Parallel()
	ctx, _ := leased()
	e := newEnv(t)
	e.task()
	a, task := e.claim("w")
	if !a.First || task.GenerationClaims != 1 {
		t.Fatalf("attempt %+v of a task claimed %d times: want its generation's first claim", a, task.GenerationClaims)
	}
	db := &statementLog{Pool: e.DB}
	l := ledger.New(db)
	c := &counter{}
	res, err := l.Do(ctx, a, effect(ledger.Keyed, "tool/0", `{"to":"acme"}`, c.perform))
	if err != nil || string(res.Body) != `{"n": 1}` || c.calls.Load() != 1 {
		t.Fatalf("keyed: %+v %v, performed %d", res, err, c.calls.Load())
	}
	// (The database's key scope is read at a Ledger's first effect only.)
	if got := db.sent(); got != "ledger.scope ledger.insertKeyedOutcome" {
		t.Fatalf("keyed on a first claim sent %q, want the record alone", got)
	}
	if _, err := l.Do(ctx, a, effect(ledger.Pure, "tool/1", `{}`, c.perform)); err != nil {
		t.Fatal(err)
	}
	if got := db.sent(); got != "ledger.lookup ledger.insertOutcome" {
		t.Fatalf("pure on a first claim sent %q, want the look-up and the record", got)
	}
	again, err := l.Do(ctx, a, effect(ledger.Keyed, "tool/0", `{"to":"acme"}`, c.perform))
	if err != nil || !again.Replayed || string(again.Body) != `{"n": 1}` || c.calls.Load() != 2 {
		t.Fatalf("the same step again in the first attempt: %+v %v, performed %d; want the first record served", again, err, c.calls.Load())
	}
	if got := db.sent(); got != "ledger.lookup" {
		t.Fatalf("the same step again sent %q, want the look-up alone", got)
	}
	if _, err := l.Do(ctx, a, effect(ledger.Keyed, "tool/0", `{"to":"globex"}`, c.perform)); !errors.Is(err, agentledger.ErrKeyReuse) || c.calls.Load() != 2 {
		t.Fatalf("the same step with another request in the first attempt: %v, performed %d; want ErrKeyReuse, nothing sent", err, c.calls.Load())
	}
	db.sent()

	b, later := e.expireAndReclaim("w")
	if b.First || later.GenerationClaims != 2 {
		t.Fatalf("a later claim (%d): %+v, want no first claim", later.GenerationClaims, b)
	}
	served, err := l.Do(ctx, b, effect(ledger.Keyed, "tool/0", `{"to":"acme"}`, c.perform))
	if err != nil || !served.Replayed || c.calls.Load() != 2 {
		t.Fatalf("replay: %+v %v, performed %d; want served", served, err, c.calls.Load())
	}
	if got := db.sent(); got != "ledger.lookup" {
		t.Fatalf("a later claim sent %q, want the look-up alone", got)
	}
	if _, err := l.Do(context.Background(), a, effect(ledger.Keyed, "tool/2", `{}`, c.perform)); err == nil {
		t.Fatal("the first claim's lease, taken meanwhile, let a call be recorded")
	}
	if got := db.sent(); got != "ledger.lookup" {
		t.Fatalf("a first claim without a deadline sent %q, want the look-up alone (its fence refused)", got)
	}
}

// A zombie of a first claim — stopped past its lease, its task claimed
// again meanwhile — finds its lease deadline ended, so it looks up, its
// fence refuses it, and it performs and records nothing. Were its own
// clock to let it believe the lease held, its call would go out (the
// downstream deduplicates it by key) and still record nothing.
func TestFirstClaimZombiePerformsNothing(t *testing.T) {
	t.Parallel()
	ctx, d := leased()
	e := newEnv(t)
	e.task()
	a, _ := e.claim("w")
	b, bt := e.expireAndReclaim("v")
	c := &counter{}
	d.End() // as the keeper does when the lease nears its end unrenewed
	if _, err := e.Ledger.Do(ctx, a, effect(ledger.Keyed, "tool/0", `{}`, c.perform)); err == nil || c.calls.Load() != 0 {
		t.Fatalf("the zombie: %v, performed %d; want refused, nothing performed", err, c.calls.Load())
	}
	believing, _ := leased()
	if _, err := e.Ledger.Do(believing, a, effect(ledger.Keyed, "tool/0", `{}`, c.perform)); err == nil || c.calls.Load() != 1 {
		t.Fatalf("a zombie believing its lease: %v, performed %d; want it sent and refused", err, c.calls.Load())
	}
	if j := e.Journal(bt); len(j) != 0 {
		t.Fatalf("journal %+v, want nothing recorded by the zombie", j)
	}
	res, err := e.Ledger.Do(ctx, b, effect(ledger.Keyed, "tool/0", `{}`, c.perform))
	if err != nil || res.Replayed || c.calls.Load() != 2 {
		t.Fatalf("the new claim: %+v %v, performed %d", res, err, c.calls.Load())
	}
}

// An effect its tool built wrong (no class, nothing to perform) fails for
// good, before anything is performed or recorded: every attempt would
// build it alike.
func TestAnEffectBuiltWrongIsPermanent(t *testing.T) {
	t.Parallel()
	ctx, _ := leased()
	e := newEnv(t)
	e.task()
	a, task := e.claim("w")
	c := &counter{}
	for _, eff := range []ledger.Effect{effect("", "tool/0", `{}`, c.perform), effect(ledger.Keyed, "tool/0", `{}`, nil)} {
		_, err := e.Ledger.Do(ctx, a, eff)
		if !errors.As(err, new(*agentledger.PermanentError)) || !errors.Is(err, agentledger.ErrInvalid) ||
			!strings.Contains(err.Error(), `an effect built wrong (operation "test.op" at tool/0)`) {
			t.Errorf("class %q: %v, want a permanent invalid effect", eff.Class, err)
		}
	}
	if c.calls.Load() != 0 || len(e.Journal(task)) != 0 {
		t.Fatalf("performed %d, recorded %d: want nothing", c.calls.Load(), len(e.Journal(task)))
	}
}
