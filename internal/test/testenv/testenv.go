// Package testenv is the world most ledger-level tests need: a fresh
// migrated database, a task store whose clock the test moves by hand, and a
// ledger — with helpers to get a claimed task and to make its lease run out,
// as after a worker crash.
package testenv

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/internal/test/testdb"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/operator"
	"github.com/agentledger/agentledger/registry"
)

// Lease is the lease Claim takes; ExpireAndReclaim moves the clock past it.
const Lease = time.Minute

// Env is one test's database.
type Env struct {
	T        testing.TB
	DB       *pgxpool.Pool
	Claims   *claims.Store   // its clock is the Env's
	Registry *registry.Store // its clock is the Env's
	Ledger   *ledger.Ledger
	Operator *operator.Service // its clock is the Env's

	mu  sync.Mutex
	now time.Time
}

// New returns an Env on a new database, with the clock pinned to now;
// its ids are past 32 bits (testdb.URL).
func New(t testing.TB) *Env {
	t.Helper()
	return on(t, testdb.New(t))
}

// NewSmallIDs is New with ids from 1 (testdb.SmallIDsURL), for tests whose
// expectations show ids to a reader (the console's screens).
func NewSmallIDs(t testing.TB) *Env {
	t.Helper()
	return on(t, testdb.NewSmallIDs(t))
}

func on(t testing.TB, db *pgxpool.Pool) *Env {
	e := &Env{T: t, DB: db, Claims: claims.New(db), Registry: registry.New(db), Ledger: ledger.New(db),
		Operator: operator.New(db), now: time.Now().UTC().Truncate(time.Second)}
	e.Claims.Now, e.Registry.Now = e.Now, e.Now
	e.Operator.PinClock(e.Now)
	return e
}

// Now is the pinned clock.
func (e *Env) Now() time.Time {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.now
}

// Advance moves the clock.
func (e *Env) Advance(d time.Duration) {
	e.mu.Lock()
	e.now = e.now.Add(d)
	e.mu.Unlock()
}

// Enqueue submits a task (kind "steps" unless p says otherwise).
func (e *Env) Enqueue(p claims.EnqueueParams) *agentledger.Task {
	e.T.Helper()
	if p.Kind == "" {
		p.Kind = "steps"
	}
	r, err := e.Claims.Enqueue(context.Background(), p)
	if err != nil {
		e.T.Fatalf("enqueue: %v", err)
	}
	return r.Task
}

// Claim claims the one due task of the default queue for worker.
func (e *Env) Claim(worker string) *agentledger.Task {
	e.T.Helper()
	got, err := e.Claims.Claim(context.Background(), claims.ClaimParams{Queue: claims.DefaultQueue, Worker: worker, Limit: 1, Lease: Lease})
	if err != nil || len(got) != 1 {
		e.T.Fatalf("claim by %s: %d tasks, %v", worker, len(got), err)
	}
	return got[0]
}

// Succeed finishes the claimed task's attempt as a success (no result).
func (e *Env) Succeed(running *agentledger.Task) {
	e.T.Helper()
	if err := e.Claims.Succeed(context.Background(), claims.LeaseOf(running), nil); err != nil {
		e.T.Fatalf("succeed task %d: %v", running.ID, err)
	}
}

// ExpireAndReclaim lets the current lease run out and claims the task again
// for worker: a new attempt with a new fencing token.
func (e *Env) ExpireAndReclaim(worker string) *agentledger.Task {
	e.T.Helper()
	e.Advance(2 * Lease)
	return e.Claim(worker)
}

// Journal returns the journal of the task's generation.
func (e *Env) Journal(t *agentledger.Task) []ledger.Entry {
	e.T.Helper()
	j, err := e.Ledger.Journal(context.Background(), t.ID, t.Generation)
	if err != nil {
		e.T.Fatal(err)
	}
	return j
}

// LedgerText is every ledger row as text, for searching (secrets must not
// be there).
func (e *Env) LedgerText() string {
	e.T.Helper()
	var s string
	if err := e.DB.QueryRow(context.Background(), `SELECT coalesce(string_agg(l::text, E'\n'), '') FROM ledger l`).Scan(&s); err != nil {
		e.T.Fatal(err)
	}
	return s
}
