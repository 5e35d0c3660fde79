package operator_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/internal/test/testenv"
	"github.com/agentledger/agentledger/operator"
)

// A cancel of a task whose effects were undone says it finished: it said
// the task "is undoing its effects (compensated)", of one done undoing.
func TestCancelOfACompensatedTaskSaysItFinished(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := testenv.New(t)
	task := e.Enqueue(claims.EnqueueParams{Kind: "steps"})
	if _, err := e.DB.Exec(ctx, `UPDATE tasks SET state = 'compensated', compensation = 'operator', finished_at = now() WHERE id = $1`, task.ID); err != nil {
		t.Fatal(err)
	}
	_, err := operator.New(e.DB).CancelBy(ctx, "", task.ID, "operator:bob")
	if want := fmt.Sprintf("task %d already finished (compensated)", task.ID); !errors.Is(err, agentledger.ErrConflict) || err.Error() != want {
		t.Fatalf("cancel of a compensated task: %v, want the conflict %q", err, want)
	}
}
