package worker_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/internal/test/testdb"
	"github.com/agentledger/agentledger/worker"
)

const crashChildEnv = "AGENTLEDGER_CRASH_CHILD_DB"

// crashChild is the worker process of TestCrashedWorkerProcess: it claims
// with a 2s lease, reports the task it started, and works until killed.
func crashChild(url string) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	db, err := pgxpool.New(ctx, url)
	if err != nil {
		fmt.Println("error", err)
		os.Exit(2)
	}
	p, err := worker.New(db, worker.Config{ID: "doomed", Lease: 2 * time.Second, Handlers: map[string]worker.Handler{
		"work": worker.HandlerFunc(func(ctx context.Context, t *agentledger.Task) (json.RawMessage, error) {
			fmt.Printf("started %d %d\n", t.ID, t.LeaseToken)
			<-ctx.Done()
			return nil, ctx.Err()
		}),
	}})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(2)
	}
	_ = p.Run(ctx)
	os.Exit(0)
}

// A worker process killed with SIGKILL mid-task loses nothing: after its
// lease expires another worker claims the task (attempt 2) and finishes it.
func TestCrashedWorkerProcess(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := testdb.URL(t)
	db := testdb.Open(t, url)
	s := claims.New(db)
	task := enqueue(t, s, "work", `{}`)

	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+url)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	line := recv(t, lines, "child to start the task")
	var started, firstToken int64
	if _, err := fmt.Sscanf(line, "started %d %d", &started, &firstToken); err != nil || started != task.ID || firstToken <= 0 {
		t.Fatalf("child said %q, want \"started %d TOKEN\"", line, task.ID)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()

	got, _ := s.Get(ctx, "", task.ID)
	if got.State != agentledger.StateRunning || got.LeaseOwner != "doomed" {
		t.Fatalf("after the kill: %s owned by %q", got.State, got.LeaseOwner)
	}

	finished := make(chan *agentledger.Task, 1)
	runPool(t, db, worker.Config{ID: "survivor", PollInterval: 100 * time.Millisecond,
		Handlers: map[string]worker.Handler{
			"work": worker.HandlerFunc(func(_ context.Context, t *agentledger.Task) (json.RawMessage, error) {
				finished <- t
				return json.RawMessage(`{"ok":true}`), nil
			}),
		}})
	second := recv(t, finished, "the survivor to claim the expired task")
	if second.ID != task.ID || second.Attempt != 2 || second.LeaseToken <= firstToken {
		t.Fatalf("survivor got task %d attempt %d token %d", second.ID, second.Attempt, second.LeaseToken)
	}
	waitState(t, s, task.ID, agentledger.StateSucceeded)
	atts, _ := s.Attempts(ctx, task.ID)
	var summary []string
	for _, a := range atts {
		summary = append(summary, fmt.Sprintf("%s/%d/%s", a.Worker, a.Token, a.Outcome))
	}
	if want := fmt.Sprintf("doomed/%d/lease_expired survivor/%d/succeeded", firstToken, second.LeaseToken); strings.Join(summary, " ") != want {
		t.Fatalf("attempts: %v, want %s", summary, want)
	}
}
