package claims_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/internal/test/testclock"
	"github.com/agentledger/agentledger/internal/test/testdb"
	"github.com/agentledger/agentledger/operator"
)

// clock is the tests' hand-moved clock, which stores pin as their now.
type clock = testclock.Clock

func newClock() *clock { return testclock.New() }

// pinnedStore returns a store on a fresh database whose clock is c.
func pinnedStore(t *testing.T, c *clock) *claims.Store {
	t.Helper()
	_, s := pinnedDB(t, c)
	return s
}

// pinnedDB is pinnedStore with the database under it, for tests that
// also read, lock or update rows themselves.
func pinnedDB(t *testing.T, c *clock) (*pgxpool.Pool, *claims.Store) {
	t.Helper()
	db := testdb.New(t)
	s := claims.New(db)
	s.Now = c.Now
	return db, s
}

// pinnedWithOperator returns a store on a fresh database and the
// operator's service over it, both on clock c: the operator's actions are
// composed over the claim protocol (package operator).
func pinnedWithOperator(t *testing.T, c *clock) (*claims.Store, *operator.Service) {
	t.Helper()
	db, s := pinnedDB(t, c)
	op := operator.New(db)
	op.PinClock(c.Now)
	return s, op
}

func enqueue(t *testing.T, s *claims.Store, p claims.EnqueueParams) *agentledger.Task {
	t.Helper()
	if p.Kind == "" {
		p.Kind = "noop"
	}
	r, err := s.Enqueue(context.Background(), p)
	if err != nil {
		t.Fatalf("enqueue: %v", err)
	}
	return r.Task
}

func claimOne(t *testing.T, s *claims.Store, worker string, lease time.Duration) *agentledger.Task {
	t.Helper()
	got, err := s.Claim(context.Background(), claims.ClaimParams{Queue: "default", Worker: worker, Limit: 1, Lease: lease})
	if err != nil {
		t.Fatalf("claim: %v", err)
	}
	if len(got) != 1 {
		t.Fatalf("claim by %s: got %d tasks, want 1", worker, len(got))
	}
	return got[0]
}

func claimNone(t *testing.T, s *claims.Store, worker string) {
	t.Helper()
	got, err := s.Claim(context.Background(), claims.ClaimParams{Queue: "default", Worker: worker, Limit: 10, Lease: time.Minute})
	if err != nil {
		t.Fatalf("claim: %v", err)
	}
	if len(got) != 0 {
		t.Fatalf("claim by %s: got task %d (state %s), want none", worker, got[0].ID, got[0].State)
	}
}

func get(t *testing.T, s *claims.Store, id int64) *agentledger.Task {
	t.Helper()
	task, err := s.Get(context.Background(), "", id)
	if err != nil {
		t.Fatalf("get: %v", err)
	}
	return task
}

func raw(s string) json.RawMessage { return json.RawMessage(s) }
