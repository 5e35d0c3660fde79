package operator_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/internal/test/testenv"
	"github.com/agentledger/agentledger/operator"
)

// A success is held by its task's row, not written to task_attempts; when
// a replay or a re-run moves the row on, the record is written from the
// row as it was, so no attempt disappears from the task's history and
// none is shown twice.
func TestASuccessOutlivesTheRowThatHeldIt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := testenv.New(t)
	svc := operator.New(e.DB)

	task := e.Enqueue(claims.EnqueueParams{})
	first := e.Claim("worker-1")
	e.Advance(2 * time.Second)
	e.Succeed(first)
	if n := written(t, e, task.ID); n != 0 {
		t.Fatalf("%d attempt records written for a success, want 0 (its row holds it)", n)
	}
	held := attempts(t, svc, task.ID)
	if len(held) != 1 || held[0].Outcome != agentledger.OutcomeSucceeded || held[0].Token != first.LeaseToken ||
		held[0].Worker != "worker-1" || held[0].EndedAt == nil || held[0].EndedAt.Sub(held[0].StartedAt) != 2*time.Second {
		t.Fatalf("attempts of a succeeded task: %+v, want one success of worker-1's lease, 2s long", held)
	}
	outcomes, err := e.Claims.AttemptOutcomes(ctx, []agentledger.Lease{claims.LeaseOf(first)})
	if err != nil || outcomes[claims.LeaseOf(first)] != agentledger.OutcomeSucceeded {
		t.Fatalf("the lease's outcome read back: %v %v, want succeeded", outcomes, err)
	}

	if _, err := svc.Replay(ctx, "", task.ID); err != nil {
		t.Fatal(err)
	}
	if n := written(t, e, task.ID); n != 1 {
		t.Fatalf("%d attempt records written once the replay moved the row on, want 1", n)
	}
	if got := attempts(t, svc, task.ID); !reflect.DeepEqual(got, held) {
		t.Fatalf("attempts after the replay: %+v, want the success as it was shown: %+v", got, held)
	}

	second := e.Claim("worker-2")
	e.Succeed(second)
	if _, err := svc.Rerun(ctx, "", task.ID); err != nil {
		t.Fatal(err)
	}
	got := attempts(t, svc, task.ID)
	if len(got) != 2 || !reflect.DeepEqual(got[0], held[0]) || got[1].Token != second.LeaseToken ||
		got[1].Worker != "worker-2" || got[1].Outcome != agentledger.OutcomeSucceeded {
		t.Fatalf("attempts after a second success and a re-run: %+v, want worker-1's and worker-2's successes", got)
	}
}

// A success recorded in task_attempts as well, as a daemon of an older
// release records it while an upgrade rolls, is shown once, and a replay
// of its task writes no second record.
func TestASuccessRecordedByAnOlderReleaseIsShownOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := testenv.New(t)
	svc := operator.New(e.DB)

	task := e.Enqueue(claims.EnqueueParams{})
	e.Succeed(e.Claim("worker-1"))
	if _, err := e.DB.Exec(ctx, `INSERT INTO task_attempts (task_id, lease_token, attempt, generation, worker, started_at, ended_at, outcome)
		SELECT id, lease_token, attempt, generation, lease_owner, attempted_at, finished_at, state FROM tasks WHERE id = $1`, task.ID); err != nil {
		t.Fatal(err)
	}
	held := attempts(t, svc, task.ID)
	if len(held) != 1 {
		t.Fatalf("attempts: %+v, want the one success", held)
	}
	if _, err := svc.Replay(ctx, "", task.ID); err != nil {
		t.Fatal(err)
	}
	if got := attempts(t, svc, task.ID); !reflect.DeepEqual(got, held) || written(t, e, task.ID) != 1 {
		t.Fatalf("attempts after the replay: %+v (%d written), want %+v (1 written)", got, written(t, e, task.ID), held)
	}
}

// written counts task id's rows in task_attempts itself.
func written(t *testing.T, e *testenv.Env, id int64) int {
	t.Helper()
	var n int
	if err := e.DB.QueryRow(context.Background(), `SELECT count(*) FROM task_attempts WHERE task_id = $1`, id).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func attempts(t *testing.T, svc *operator.Service, id int64) []agentledger.Attempt {
	t.Helper()
	d, err := svc.Show(context.Background(), "", id)
	if err != nil {
		t.Fatal(err)
	}
	return d.Attempts
}
