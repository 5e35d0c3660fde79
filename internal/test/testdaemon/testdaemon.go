// Package testdaemon runs an embedded daemon in a test and waits for its
// tasks, and runs the example programs: what the tests of the daemon, the
// client, the MCP tools and the examples share.
package testdaemon

import (
	"bytes"
	"context"
	"os/exec"
	"testing"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/daemon"
	"github.com/agentledger/agentledger/internal/test/testdb"
)

// Run runs d until the test ends (and fails the test if Run returns an
// error), and returns once d is ready to claim.
func Run(t testing.TB, d *daemon.Daemon) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() { stopped <- d.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-stopped; err != nil {
			t.Errorf("daemon Run: %v", err)
		}
	})
	select {
	case <-d.Ready():
	case err := <-stopped:
		stopped <- err // for the cleanup
		t.Fatalf("the daemon stopped before it was ready: %v", err)
	case <-time.After(time.Minute):
		t.Fatal("the daemon was not ready within a minute")
	}
}

// WaitFinished waits until task id is succeeded, dead, cancelled or needs
// attention, failing the test after 20 s.
func WaitFinished(t testing.TB, s *claims.Store, id int64) *agentledger.Task {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		task, err := s.Get(context.Background(), "", id)
		if err != nil {
			t.Fatal(err)
		}
		switch task.State {
		case agentledger.StateSucceeded, agentledger.StateDead, agentledger.StateCancelled, agentledger.StateNeedsAttention:
			return task
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %d is still %s after 20s", id, task.State)
		}
		time.Sleep(25 * time.Millisecond) // polling a condition, not ordering events
	}
}

// RunProgram builds the main package in the test's directory and runs it
// as a user would, on a fresh test database (DATABASE_URL), returning its
// output; a failed build or run fails the test.
func RunProgram(t testing.TB) string {
	t.Helper()
	bin := t.TempDir() + "/program"
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	cmd := exec.Command(bin)
	cmd.Env = append(cmd.Environ(), "DATABASE_URL="+testdb.URL(t))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	return out.String()
}
