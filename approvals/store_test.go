package approvals_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/approvals"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/internal/test/atonce"
	"github.com/agentledger/agentledger/internal/test/testdb"
	"github.com/agentledger/agentledger/operator"
)

// request records a request of a new task's step tool/0, waiting for
// timeout.
func request(t *testing.T, s *approvals.Store, db claims.DB, timeout time.Duration) (approvals.Request, *agentledger.Task) {
	t.Helper()
	ctx := context.Background()
	r, err := claims.New(db).Enqueue(ctx, claims.EnqueueParams{Kind: "steps", Tenant: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	req, asked, err := s.Ensure(ctx, approvals.Request{TaskID: r.Task.ID, Generation: r.Task.Generation, Step: "tool/0",
		Tenant: "acme", Tool: "http_request", Class: "keyed", Call: json.RawMessage(`{"method":"POST","url":"https://pay.example/refunds"}`),
		Approvers: []string{"U1"}, OnTimeout: "deny"}, timeout)
	if err != nil || !asked || req.State != approvals.Pending {
		t.Fatalf("ensure: %+v asked %v: %v", req, asked, err)
	}
	return req, r.Task
}

// The first decision wins: a hundred deciders at once on one request, half
// approving, half denying — one wins, each of the others gets that
// decision back, and the request holds it.
func TestFirstDecisionWins(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := testdb.URL(t)
	db := testdb.Open(t, url)
	s := approvals.NewStore(db)
	req, _ := request(t, s, db, time.Hour)

	const deciders = 100
	type answer struct {
		r   approvals.Request
		won bool
		err error
	}
	answers := make([]answer, deciders)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range deciders {
		wg.Go(func() {
			<-start
			r, won, err := approvals.NewStore(db).Decide(ctx, approvals.Decision{ID: req.ID, Approve: i%2 == 0,
				By: fmt.Sprintf("U%d", i), Via: "api", Reason: fmt.Sprintf("decider %d", i)})
			answers[i] = answer{r, won, err}
		})
	}
	close(start)
	wg.Wait()
	winners := 0
	var final approvals.Request
	for i, a := range answers {
		if a.err != nil {
			t.Fatalf("decider %d: %v", i, a.err)
		}
		if a.won {
			winners++
			final = a.r
		}
	}
	if winners != 1 {
		t.Fatalf("%d decisions won, want 1", winners)
	}
	for i, a := range answers {
		if a.r.State != final.State || a.r.DecidedBy != final.DecidedBy {
			t.Fatalf("decider %d was told %s by %s; the decision was %s by %s", i, a.r.State, a.r.DecidedBy, final.State, final.DecidedBy)
		}
	}
	got, err := s.Get(ctx, "", req.ID)
	if err != nil || got.State != final.State || got.DecidedBy != final.DecidedBy || got.DecidedVia != "api" || got.DecidedAt == nil {
		t.Fatalf("stored %+v %v, want %s by %s", got, err, final.State, final.DecidedBy)
	}
}

// A decision wakes the waiting task; another tenant cannot decide; a
// request past its expiry is decided by its timeout, whatever comes.
func TestDecisionWakesTaskAndTimeoutDecides(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	s := approvals.NewStore(db)
	req, task := request(t, s, db, time.Hour)
	if _, err := db.Exec(ctx, `UPDATE tasks SET run_at = now() + interval '1 hour' WHERE id = $1`, task.ID); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Decide(ctx, approvals.Decision{ID: req.ID, Tenant: "other", Approve: true, By: "x", Via: "api"}); !errors.Is(err, agentledger.ErrNotFound) {
		t.Fatalf("another tenant's decision: %v, want not found", err)
	}
	r, won, err := s.Decide(ctx, approvals.Decision{ID: req.ID, Tenant: "acme", Approve: true, By: "U1", Via: "slack", Reason: "ok"})
	if err != nil || !won || r.State != approvals.Approved {
		t.Fatalf("decide: %+v %v %v", r, won, err)
	}
	var due bool
	if err := db.QueryRow(ctx, `SELECT run_at <= now() FROM tasks WHERE id = $1`, task.ID).Scan(&due); err != nil || !due {
		t.Fatalf("the task is not due after the decision (%v)", err)
	}

	late, _ := request(t, s, db, time.Millisecond)
	if _, err := db.Exec(ctx, `UPDATE approvals SET expires_at = now() - interval '1 second' WHERE id = $1`, late.ID); err != nil {
		t.Fatal(err)
	}
	r, won, err = s.Decide(ctx, approvals.Decision{ID: late.ID, Approve: true, By: "U1", Via: "slack"})
	if err != nil || won || r.State != approvals.Expired || r.DecidedVia != "timeout" {
		t.Fatalf("a decision after the expiry: %+v won %v %v, want the timeout's denial", r, won, err)
	}
}

// Cancelling a task withdraws its pending request.
func TestCancelWithdrawsTheRequest(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	s := approvals.NewStore(db)
	req, task := request(t, s, db, time.Hour)
	if _, err := operator.New(db).Cancel(ctx, "", task.ID); err != nil {
		t.Fatal(err)
	}
	r, err := s.Get(ctx, "", req.ID)
	if err != nil || r.State != approvals.Withdrawn || r.DecisionReason != "its task was cancelled" {
		t.Fatalf("after the cancel: %+v %v", r, err)
	}
	if _, won, _ := s.Decide(ctx, approvals.Decision{ID: req.ID, Approve: true, By: "U1", Via: "slack"}); won {
		t.Fatal("a withdrawn request was decided")
	}
}

// A decision racing its task's cancel never deadlocks: both take the task
// first. Either the decision wins (and the cancel finds the task woken), or
// the cancel withdraws the request and the decision is told so; neither
// errs.
func TestDecisionRacingACancel(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	s, op := approvals.NewStore(db), operator.New(db)
	for round := range 20 {
		req, task := request(t, s, db, time.Hour)
		// Parked for the decision, as the gate leaves it.
		if _, err := db.Exec(ctx, `UPDATE tasks SET state = 'waiting', run_at = now() + interval '1 hour' WHERE id = $1`, task.ID); err != nil {
			t.Fatal(err)
		}
		var won bool
		var decideErr, cancelErr error
		atonce.Run(func() {
			_, won, decideErr = s.Decide(ctx, approvals.Decision{ID: req.ID, Approve: true, By: "U1", Via: "api"})
		}, func() {
			_, cancelErr = op.Cancel(ctx, "", task.ID)
		})
		if decideErr != nil || cancelErr != nil {
			t.Fatalf("round %d: decide %v, cancel %v; want neither to err", round, decideErr, cancelErr)
		}
		r, err := s.Get(ctx, "", req.ID)
		if err != nil || (won != (r.State == approvals.Approved)) || (!won && r.State != approvals.Withdrawn) {
			t.Fatalf("round %d: won %v, request %s (%v)", round, won, r.State, err)
		}
	}
}

// Asking again at a step finds its request and takes no id: the next
// request's id follows the first's. (An insert that met the recorded
// request took an id all the same: requests went 1, 3, 5.)
func TestAskingAgainTakesNoID(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	s := approvals.NewStore(db)
	first, task := request(t, s, db, time.Hour)
	for range 3 {
		again, asked, err := s.Ensure(ctx, approvals.Request{TaskID: task.ID, Generation: task.Generation, Step: "tool/0",
			Tenant: "acme", Tool: "http_request", Class: "keyed", Call: json.RawMessage(`{}`), OnTimeout: "deny"}, time.Hour)
		if err != nil || asked || again.ID != first.ID {
			t.Fatalf("asked again: %+v asked %v: %v, want request %d found", again, asked, err, first.ID)
		}
	}
	next, _ := request(t, s, db, time.Hour)
	if next.ID != first.ID+1 {
		t.Fatalf("the next request is %d, want %d: asking again took ids", next.ID, first.ID+1)
	}
}
