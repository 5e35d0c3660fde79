package notify_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/notify"
	"github.com/agentledger/agentledger/notify/console"
	"github.com/agentledger/agentledger/tools"
)

// A notify tool call is posted once through the console sink, as its own
// effect at the call's step; its task's state changes post and edit the
// rule's message in the same file.
func TestToolMessageThroughConsole(t *testing.T) {
	w := newWorld(t)
	var out bytes.Buffer
	path := filepath.Join(t.TempDir(), "notifications.jsonl")
	sink, err := console.New(&out, path)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	task := w.Enqueue(claims.EnqueueParams{MaxAttempts: 5})
	a := w.claimTask(task.ID)
	c := tools.Call{Task: a, StepPath: "tool/0", Args: []byte(`{"channel":"ops","text":"deploy finished"}`)}
	for range 2 { // a replayed step writes nothing more
		if _, err := tools.Invoke(ctx, w.Ledger, notify.NewTool(), c); err != nil {
			t.Fatal(err)
		}
	}
	w.finish(a, "retry")
	w.finish(w.claimTask(task.ID), "succeed")
	w.Advance(time.Minute) // the tool's event is stamped by the database's clock, not the pinned one
	d := w.dispatcher("d1", sink)
	w.drain(d)

	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	file := string(b)
	if n := strings.Count(file, `"text":"deploy finished"`); n != 1 {
		t.Errorf("the tool's message is in the file %d times, want once:\n%s", n, file)
	}
	if posts, edits := strings.Count(file, `"key":`), strings.Count(file, `"update_of":`); posts != 2 || edits != 1 {
		t.Errorf("%d posts and %d edits, want 2 (the message, the rule's) and 1:\n%s", posts, edits, file)
	}
	if !strings.Contains(out.String(), "succeeded") {
		t.Errorf("the console does not show the success:\n%s", out.String())
	}
	var steps []string
	for _, e := range w.Journal(task) {
		steps = append(steps, e.Operation+"@"+e.StepPath)
		if e.State != ledger.StateCompleted {
			t.Errorf("%s@%s is %s", e.Operation, e.StepPath, e.State)
		}
	}
	if got := strings.Join(steps, " "); !strings.HasPrefix(got, "notify@tool/0 ") || !strings.Contains(got, "notify.post@tool/0") ||
		!strings.Contains(got, "notify.post@notify/ops") || !strings.Contains(got, "notify.update@notify/ops/") {
		t.Errorf("journal = %s", got)
	}
}
