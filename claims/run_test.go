package claims

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/internal/test/testdb"
)

// runCase is a queue's state and a claim of it: the run claim answers as
// the full claim does (same), or answers nothing.
type runCase struct {
	name   string
	setup  []string
	from   string // the hint's cursor
	got    int    // what the tenant at the cursor got of its turn
	limit  int
	answer bool // the run claim answers (else it answers nothing)
}

// thin inserts k due no-op tasks for each of n tenants r0000, r0001, …
func thin(n, k int) string {
	return fmt.Sprintf(`INSERT INTO tasks (tenant, kind, run_at)
		SELECT 'r' || lpad((g %% %d)::text, 4, '0'), 'noop', now() - interval '1 hour' + g * interval '1 microsecond'
		FROM generate_series(0, %d) g`, n, n*k-1)
}

// A claim hinted crowded takes what the full claim takes: the same tasks
// (each tenant's turn in rotation order, weights, caps, what the cursor's
// tenant still owes, the newcomer lane first). Its run claim answers where
// its read of the index shows a crowd from the cursor on (answer), and the
// full claim does the rest: all of it where the run claim answers nothing,
// what is left where it comes back short. Each claim runs in a
// transaction rolled back, so the claims of a case see the same queue.
func TestARunClaimAnswersAsTheFullClaim(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, c := range []runCase{
		{name: "a crowd from the first tenant", setup: []string{thin(200, 3)}, limit: 100, answer: true},
		{name: "the cursor's tenant owes one", setup: []string{thin(200, 3)}, from: "r0049", got: 1, limit: 100, answer: true},
		{name: "the cursor's tenant had its turn", setup: []string{thin(200, 3)}, from: "r0049", got: 2, limit: 100, answer: true},
		{name: "a claim of one task", setup: []string{thin(200, 3)}, from: "r0010", limit: 1, answer: true},
		{name: "a claim of 1,000", setup: []string{thin(2000, 1)}, limit: 1000, answer: true},
		{name: "weights and caps", setup: []string{thin(300, 4),
			`INSERT INTO tenant_shares (tenant, weight, max_running, source) VALUES
				('r0002', 3, NULL, 'config'), ('r0004', 2, 1, 'config'), ('r0005', 1, 1, 'config'), ('r0270', 1, 2, 'config')`,
			`UPDATE tasks SET state = 'running', lease_owner = 'x', lease_expires_at = now() + interval '1 hour'
				WHERE id IN (SELECT min(id) FROM tasks WHERE tenant IN ('r0004', 'r0005') GROUP BY tenant)`,
		}, limit: 100, answer: true},
		{name: "a newcomer", setup: []string{thin(200, 3),
			`INSERT INTO tasks (tenant, kind, newcomer) VALUES ('zz', 'noop', true)`}, from: "r0050", limit: 100, answer: true},
		{name: "a newcomer, the ids against the rotation", setup: []string{
			`INSERT INTO tasks (tenant, kind, run_at)
			SELECT 'r' || lpad((199 - g % 200)::text, 4, '0'), 'noop', now() - interval '1 hour' + g * interval '1 microsecond'
			FROM generate_series(0, 599) g`,
			`INSERT INTO tasks (tenant, kind, newcomer) VALUES ('zz', 'noop', true)`}, limit: 100, answer: true},
		{name: "a newcomer in the run, with tasks past it", setup: []string{thin(200, 3),
			`INSERT INTO tasks (tenant, kind, run_at, newcomer) VALUES ('r0010x', 'noop', now() - interval '2 hours', true),
				('r0010x', 'noop', now() - interval '90 minutes', NULL), ('r0010x', 'noop', now() - interval '80 minutes', NULL)`},
			limit: 100, answer: true},
		{name: "a capped tenant at the cursor", setup: []string{thin(200, 3),
			`INSERT INTO tenant_shares (tenant, weight, max_running, source) VALUES ('r0050', 3, 2, 'config')`},
			from: "r0050", got: 2, limit: 100, answer: true},
		{name: "priorities within a tenant", setup: []string{thin(200, 3),
			`UPDATE tasks SET priority = -1 WHERE id IN (SELECT max(id) FROM tasks GROUP BY tenant)`}, limit: 100, answer: true},
		{name: "a short run, then the full claim from where it stopped", setup: []string{thin(200, 1)}, from: "r0120", limit: 100, answer: true},
		{name: "fewer tenants than a crowd", setup: []string{thin(30, 10)}, limit: 100},
		{name: "the end of the rotation", setup: []string{thin(200, 3)}, from: "r0190", limit: 100},
		{name: "a crowd of deep tenants", setup: []string{thin(100, 100)}, limit: 100},
		{name: "nothing due", limit: 100},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			db := testdb.New(t)
			for _, q := range c.setup {
				if _, err := db.Exec(ctx, q); err != nil {
					t.Fatal(err)
				}
			}
			full := runClaimIDs(t, db, claimDueSQL, c)
			run := runClaimIDs(t, db, claimRunSQL, c)
			hinted := runClaimIDs(t, db, "", c)
			trusted := runClaimIDs(t, db, trustedRun, c)
			// Trusted, the run claim reads no proof: it takes the turns
			// past the cursor wherever there are any.
			if c.name == "the end of the rotation" {
				if n := len(runClaimIDs(t, db, claimRunSQL+trustedRun, c)); n != 20 {
					t.Fatalf("a run claim trusting a crowd at the rotation's end took %d tasks, want the turns of its last 10 tenants, the cursor's on (20)", n)
				}
			}
			switch {
			case !c.answer && len(run) > 0:
				t.Fatalf("the run claim took %d tasks, want none (the full claim took %d)", len(run), len(full))
			case c.answer && len(run) == 0:
				t.Fatalf("the run claim took nothing (the full claim took %d): the case tests nothing", len(full))
			case !c.answer && len(hinted) != len(full):
				// Below a crowd the full claim's quotas draw lots: the
				// same claim twice may take different tasks.
				t.Fatalf("a claim hinted crowded took %d tasks, the full claim %d", len(hinted), len(full))
			case c.answer && !slices.Equal(hinted, full):
				t.Fatalf("a claim hinted crowded took %d tasks %v\nthe full claim %d tasks %v", len(hinted), hinted, len(full), full)
			case len(trusted) != len(full):
				// A crowd trusted where there is none: the run takes
				// turns, the full claim the rest.
				t.Fatalf("a claim trusting a crowd took %d tasks, the full claim %d", len(trusted), len(full))
			case c.answer && !slices.Equal(trusted, full):
				t.Fatalf("a claim trusting a crowd took %d tasks %v\nthe full claim %d tasks %v", len(trusted), trusted, len(full), full)
			}
		})
	}
}

// trustedRun, as runClaimIDs's q, claims as "" does with a hint that
// trusts the crowd (ClaimHint.trusted): the run claim skips its proof;
// claimRunSQL+trustedRun runs the run claim alone, trusting.
const trustedRun = "trusted"

// runClaimIDs claims with q in a transaction it rolls back (with "", as
// Store.Claim does for a loop whose hint says crowded: the run claim, and
// the full one after it if need be), and returns the claimed ids, each
// with its tenant.
func runClaimIDs(t *testing.T, db *pgxpool.Pool, q string, c runCase) []string {
	t.Helper()
	ctx := context.Background()
	tx, err := db.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // the claim is undone on purpose
	hint := &ClaimHint{from: c.from, got: c.got}
	p := ClaimParams{Queue: DefaultQueue, Worker: "w", Limit: c.limit, Lease: time.Minute, DueOnly: true, Hint: hint}
	var tasks []*agentledger.Task
	if q == claimRunSQL+trustedRun {
		p.trusted = true
		q = claimRunSQL
	}
	if q == "" || q == trustedRun {
		hint.run = 1
		if q == trustedRun {
			hint.trust = provenRuns
		}
		tasks, err = New(tx).Claim(ctx, p)
	} else {
		tasks, err = New(tx).claim(ctx, q, p)
	}
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]string, len(tasks))
	for i, task := range tasks {
		ids[i] = fmt.Sprintf("%d/%s", task.ID, task.Tenant)
	}
	slices.Sort(ids)
	return ids
}

// An empty run claim after one that took tasks (the rotation's end) costs
// one full claim before the next try; empty tries in a row wait twice as
// long each time, up to runBackoff; a try that takes tasks starts over.
func TestRunClaimTriesBackOff(t *testing.T) {
	several := []*agentledger.Task{{Tenant: "a"}, {Tenant: "b"}}
	h := &ClaimHint{}
	h.saw(several)
	if !h.crowded() {
		t.Fatal("a full claim of several tenants: the next does not try a run claim")
	}
	fulls := func() int { // full claims until the next try
		n := 0
		for h.ranShort(); !h.crowded(); n++ {
			if n > 2*runBackoff {
				t.Fatal("no try after twice the longest backoff")
			}
			h.saw(several)
		}
		return n
	}
	var got []int
	for range 7 {
		got = append(got, fulls())
	}
	if want := []int{1, 2, 4, 8, 16, 16, 16}; !slices.Equal(got, want) {
		t.Fatalf("full claims between empty tries: %v, want %v", got, want)
	}
	h.ran(100, false, false)
	if n := fulls(); n != 1 {
		t.Fatalf("after a try that took tasks, an empty one cost %d full claims, want 1", n)
	}
	h.saw([]*agentledger.Task{{Tenant: "a"}})
	if h.crowded() {
		t.Fatal("a full claim of one tenant's tasks: the next tries a run claim")
	}
}

// A run claim that proved the crowd and came back full lets the next
// provenRuns skip the proof while each comes back full; the one after
// proves it again, and a run that comes back short or empty ends the
// chain. A crowd proven for claims of up to 256 (64 tenants) is not one
// for a claim of 1,000 (250).
func TestRunClaimsTrustAProvenCrowd(t *testing.T) {
	h := &ClaimHint{}
	if h.trusted(100) {
		t.Fatal("a new hint trusts a crowd it never proved")
	}
	proofs := 0
	for range 3 * (provenRuns + 1) {
		trusted := h.trusted(100)
		if !trusted {
			proofs++
		}
		h.ran(100, true, trusted)
	}
	if proofs != 3 {
		t.Fatalf("%d proofs in %d full run claims, want 3", proofs, 3*(provenRuns+1))
	}
	h.ran(100, true, false)
	if !h.trusted(1) || !h.trusted(256) || h.trusted(1000) {
		t.Fatalf("a crowd proven by a claim of 100: trusted for 1 %v, 256 %v, 1,000 %v; want true, true, false",
			h.trusted(1), h.trusted(256), h.trusted(1000))
	}
	h.ran(100, false, true)
	if h.trusted(100) {
		t.Fatal("a short run claim left the crowd trusted")
	}
	h.ran(100, true, false)
	h.ranShort()
	if h.trusted(100) {
		t.Fatal("an empty run claim left the crowd trusted")
	}
}

// recordingRun is a database that notes, of each run claim, whether it
// trusted the crowd ($11) and how many tasks it took.
type recordingRun struct {
	*pgxpool.Pool
	runs *[]string
}

func (r recordingRun) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	if strings.HasPrefix(sql, "/* claims.claimRun */") {
		*r.runs = append(*r.runs, fmt.Sprint(args[10]))
	}
	return r.Pool.Query(ctx, sql, args...)
}

// A loop's run claims, through Store.Claim: the first proves the crowd,
// the full ones after it trust it, and one that comes back short (the
// rotation's end) ends the chain, so the next proves it again. 75 thin
// tenants of 3 tasks, claims of 10 (a turn of 1): a full claim serves
// t000–t009, the runs from there 10 tenants each, the seventh only the
// last 5 (topped up from the start), and the eighth proves the crowd.
func TestAClaimLoopTrustsTheCrowdItProved(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	if _, err := db.Exec(ctx, thin(75, 3)); err != nil {
		t.Fatal(err)
	}
	var runs []string
	s := New(recordingRun{db, &runs})
	hint := &ClaimHint{}
	for i := 0; len(runs) < 8; i++ {
		got, err := s.Claim(ctx, ClaimParams{Queue: DefaultQueue, Worker: "w", Limit: 10, Lease: time.Minute, DueOnly: true, Hint: hint})
		if err != nil || len(got) != 10 {
			t.Fatalf("claim %d: %d tasks, %v; want 10", i+1, len(got), err)
		}
		if i > 20 {
			t.Fatalf("20 claims, %d of them run claims: %v", len(runs), runs)
		}
	}
	if got, want := strings.Join(runs, " "), "false true true true true true true false"; got != want {
		t.Fatalf("the run claims trusted the crowd: %s, want %s", got, want)
	}
}

// failingRun is a database on which the run claim fails and every other
// statement runs.
type failingRun struct{ *pgxpool.Pool }

func (f failingRun) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	if strings.HasPrefix(sql, "/* claims.claimRun */") {
		return nil, errors.New("the run claim broke")
	}
	return f.Pool.Query(ctx, sql, args...)
}

// A loop whose run claim fails still claims: the full claim serves, and
// a second failure in a row keeps the next claim from trying again.
func TestAFailingRunClaimFallsBackToTheFullClaim(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	if _, err := db.Exec(ctx, thin(200, 3)); err != nil {
		t.Fatal(err)
	}
	hint := &ClaimHint{run: 1}
	s := New(failingRun{db})
	for i := range 2 {
		got, err := s.Claim(ctx, ClaimParams{Queue: DefaultQueue, Worker: "w", Limit: 100, Lease: time.Minute, DueOnly: true, Hint: hint})
		if err != nil || len(got) != 100 {
			t.Fatalf("claim %d: %d tasks, %v; want the full claim's 100", i+1, len(got), err)
		}
	}
	if hint.crowded() {
		t.Fatal("after two failures in a row the next claim tries the run claim again")
	}
}

// A run claim short by a task is topped up from the next tenant in the
// rotation; that one tenant's task does not make the loop think its queue
// holds one tenant alone, nor stop its run claims.
func TestATopUpTeachesTheHintNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	if _, err := db.Exec(ctx, thin(200, 1)); err != nil {
		t.Fatal(err)
	}
	hint := &ClaimHint{run: 1, from: "r0101"}
	got, err := New(db).Claim(ctx, ClaimParams{Queue: DefaultQueue, Worker: "w", Limit: 100, Lease: time.Minute, DueOnly: true, Hint: hint})
	if err != nil || len(got) != 100 {
		t.Fatalf("claimed %d tasks, %v; want 99 by the run and 1 by the top-up", len(got), err)
	}
	if hint.likely() || !hint.crowded() {
		t.Fatalf("after the top-up: alone %v, run claims %v; want no alone try, and run claims", hint.likely(), hint.crowded())
	}
}
