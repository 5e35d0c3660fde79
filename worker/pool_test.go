package worker_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/internal/test/logbuf"
	"github.com/agentledger/agentledger/internal/test/testdb"
	"github.com/agentledger/agentledger/operator"
	"github.com/agentledger/agentledger/tools"
	"github.com/agentledger/agentledger/worker"
)

func TestPoolRunsEveryTaskOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	s := claims.New(db)
	const n = 500
	batch := make([]claims.EnqueueParams, n)
	for i := range batch {
		batch[i] = claims.EnqueueParams{Kind: "echo", Payload: json.RawMessage(fmt.Sprintf(`{"i":%d}`, i))}
	}
	if _, err := s.EnqueueBatch(ctx, batch); err != nil {
		t.Fatal(err)
	}
	var runs atomic.Int64
	echo := worker.HandlerFunc(func(ctx context.Context, task *agentledger.Task) (json.RawMessage, error) {
		runs.Add(1)
		return tools.Echo(ctx, task)
	})
	// Two pools compete for the same queue.
	for i := range 2 {
		runPool(t, db, worker.Config{ID: fmt.Sprintf("w%d", i), Concurrency: 20, BatchSize: 7,
			Handlers: map[string]worker.Handler{"echo": echo}})
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		var left int
		if err := db.QueryRow(ctx, `SELECT count(*) FROM tasks WHERE state <> 'succeeded'`).Scan(&left); err != nil {
			t.Fatal(err)
		}
		if left == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d tasks not succeeded after 30s", left)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if runs.Load() != n {
		t.Fatalf("handler ran %d times for %d tasks", runs.Load(), n)
	}
	var bad int
	if err := db.QueryRow(ctx, `SELECT count(*) FROM tasks WHERE result <> payload OR attempt <> 1`).Scan(&bad); err != nil || bad != 0 {
		t.Fatalf("%d tasks with wrong result or attempt (%v)", bad, err)
	}
}

// With polling effectively off, only NOTIFY can wake the idle pool.
func TestNotifyWakesIdlePool(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	s := claims.New(db)
	started := make(chan int64, 1)
	runPool(t, db, worker.Config{PollInterval: time.Hour, Handlers: map[string]worker.Handler{
		"noop": worker.HandlerFunc(func(_ context.Context, task *agentledger.Task) (json.RawMessage, error) {
			started <- task.ID
			return nil, nil
		}),
	}})
	// The first claim happens at start; later tasks need a notification.
	// Enqueue a few times so at least one lands after LISTEN is in place.
	var want int64
	for i := 0; ; i++ {
		want = enqueue(t, s, "noop", `{}`).ID
		select {
		case got := <-started:
			if got != want && i == 0 {
				t.Fatalf("started %d, want %d", got, want)
			}
			return
		case <-time.After(2 * time.Second):
			if i == 5 {
				t.Fatal("no task started within 10s: NOTIFY did not wake the pool")
			}
		}
	}
}

func TestPollOnlyPicksUpTasks(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	s := claims.New(db)
	done := make(chan struct{}, 1)
	runPool(t, db, worker.Config{PollOnly: true, PollInterval: 50 * time.Millisecond, Handlers: map[string]worker.Handler{
		"noop": worker.HandlerFunc(func(context.Context, *agentledger.Task) (json.RawMessage, error) {
			done <- struct{}{}
			return nil, nil
		}),
	}})
	task := enqueue(t, s, "noop", `{}`)
	recv(t, done, "poll-only claim")
	waitState(t, s, task.ID, agentledger.StateSucceeded)
}

func TestFailuresRetryOrDie(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	s := claims.New(db)
	var logged logbuf.Buffer
	runPool(t, db, worker.Config{
		Logger:  slog.New(slog.NewTextHandler(&logged, &slog.HandlerOptions{Level: slog.LevelError})),
		Backoff: agentledger.Backoff{Base: time.Hour, Max: time.Hour},
		Handlers: map[string]worker.Handler{
			"flaky": worker.HandlerFunc(func(context.Context, *agentledger.Task) (json.RawMessage, error) {
				return nil, errors.New("downstream 503")
			}),
			"bad": worker.HandlerFunc(func(context.Context, *agentledger.Task) (json.RawMessage, error) {
				return nil, agentledger.Permanent(errors.New("payload lacks field x"))
			}),
			"panics": worker.HandlerFunc(func(context.Context, *agentledger.Task) (json.RawMessage, error) {
				panic("nil map")
			}),
			"limited": worker.HandlerFunc(func(context.Context, *agentledger.Task) (json.RawMessage, error) {
				return nil, agentledger.RetryAfter(errors.New("429"), 2*time.Hour)
			}),
			"unknown-effect": worker.HandlerFunc(func(context.Context, *agentledger.Task) (json.RawMessage, error) {
				return nil, fmt.Errorf("effect tool/0: %w", agentledger.ErrNeedsAttention)
			}),
		}})
	flaky := enqueue(t, s, "flaky", `{}`)
	bad := enqueue(t, s, "bad", `{}`)
	unknown := enqueue(t, s, "nobody-handles-this", `{}`)
	panics := enqueue(t, s, "panics", `{}`)
	limited := enqueue(t, s, "limited", `{}`)
	parked := enqueue(t, s, "unknown-effect", `{}`)

	got := waitState(t, s, flaky.ID, agentledger.StateRetrying)
	if got.LastError != "downstream 503" || got.RunAt.Before(time.Now().Add(50*time.Minute)) {
		t.Errorf("flaky: error %q run_at %v (want about an hour ahead)", got.LastError, got.RunAt)
	}
	got = waitState(t, s, limited.ID, agentledger.StateRetrying)
	if got.RunAt.Before(time.Now().Add(110 * time.Minute)) {
		t.Errorf("Retry-After not honoured: run_at %v", got.RunAt)
	}
	got = waitState(t, s, bad.ID, agentledger.StateDead)
	if got.LastError != "payload lacks field x" {
		t.Errorf("bad: error %q", got.LastError)
	}
	// A kind this pool has no handler for is left to daemons that have one
	// (a rolling deploy): it is never claimed here, let alone failed.
	if got, _ := s.Get(context.Background(), "", unknown.ID); got.State != agentledger.StateQueued || got.Attempt != 0 {
		t.Errorf("unknown kind: state %s attempt %d, want queued and never attempted", got.State, got.Attempt)
	}
	got = waitState(t, s, parked.ID, agentledger.StateNeedsAttention)
	if got.LastError != "effect tool/0: "+agentledger.ErrNeedsAttention.Error() || got.LeaseOwner != "" {
		t.Errorf("parked: %+v", got)
	}
	got = waitState(t, s, panics.ID, agentledger.StateRetrying)
	if got.LastError != "handler panicked: nil map (its stack is in the worker's log)" {
		t.Errorf("panic: error %q", got.LastError)
	}
	// The stack names where the bug is.
	if log := logged.String(); !strings.Contains(log, `msg="handler panicked"`) || !strings.Contains(log, "pool_test.go") {
		t.Errorf("the panic's log at level error:\n%s", log)
	}
}

// An operator's cancel reaches a running attempt of a pool that hears no
// notification (polling only, as behind PgBouncer) at its next
// heartbeat: the handler's context ends with ErrCancelled and the task
// ends cancelled.
func TestCancelSeenAtNextHeartbeat(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	s := claims.New(db)
	started := make(chan struct{}, 1)
	cause := make(chan error, 1)
	runPool(t, db, worker.Config{Lease: 2 * time.Second, HeartbeatInterval: 100 * time.Millisecond, PollOnly: true, PollInterval: 50 * time.Millisecond,
		Handlers: map[string]worker.Handler{
			"block": worker.HandlerFunc(func(ctx context.Context, _ *agentledger.Task) (json.RawMessage, error) {
				started <- struct{}{}
				<-ctx.Done()
				cause <- context.Cause(ctx)
				return nil, ctx.Err()
			}),
		}})
	task := enqueue(t, s, "block", `{}`)
	recv(t, started, "task start")
	if _, err := operator.New(db).Cancel(ctx, "", task.ID); err != nil {
		t.Fatal(err)
	}
	if err := recv(t, cause, "cancellation"); !errors.Is(err, agentledger.ErrCancelled) {
		t.Fatalf("handler context cause = %v, want ErrCancelled", err)
	}
	got := waitState(t, s, task.ID, agentledger.StateCancelled)
	if got.LeaseOwner != "" || got.FinishedAt == nil {
		t.Fatalf("cancelled task: %+v", got)
	}
	atts, _ := s.Attempts(ctx, task.ID)
	if len(atts) != 1 || atts[0].Outcome != agentledger.OutcomeCancelled {
		t.Fatalf("attempts: %+v", atts)
	}
}

// An operator's cancel reaches a running attempt at once, through the
// pool's LISTEN session, not at its next heartbeat an hour away: the
// attempt's steps must not go on calling out until then.
func TestCancelHeardAtOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	s := claims.New(db)
	started := make(chan struct{}, 1)
	cause := make(chan error, 1)
	listening := make(chan struct{}, 1)
	runPool(t, db, worker.Config{Lease: 2 * time.Hour, HeartbeatInterval: time.Hour, Grace: 50 * time.Millisecond, // the other task blocks until stopped
		Listening: func(up bool) {
			if up {
				select {
				case listening <- struct{}{}:
				default:
				}
			}
		},
		Handlers: map[string]worker.Handler{
			"block": worker.HandlerFunc(func(ctx context.Context, _ *agentledger.Task) (json.RawMessage, error) {
				started <- struct{}{}
				<-ctx.Done()
				cause <- context.Cause(ctx)
				return nil, ctx.Err()
			}),
		}})
	recv(t, listening, "the LISTEN session") // subscribed: a notice sent before would reach no one
	task := enqueue(t, s, "block", `{}`)
	other := enqueue(t, s, "block", `{}`)
	recv(t, started, "task start")
	recv(t, started, "other task start")
	if _, err := operator.New(db).Cancel(ctx, "", task.ID); err != nil {
		t.Fatal(err)
	}
	if err := recv(t, cause, "cancellation"); !errors.Is(err, agentledger.ErrCancelled) {
		t.Fatalf("handler context cause = %v, want ErrCancelled", err)
	}
	waitState(t, s, task.ID, agentledger.StateCancelled)
	// The notice names its lease: the other attempt runs on.
	if got, _ := s.Get(ctx, "", other.ID); got.State != agentledger.StateRunning || got.CancelRequested != nil {
		t.Fatalf("the other task: %s, cancel requested %v; want it running", got.State, got.CancelRequested)
	}
	select {
	case err := <-cause:
		t.Fatalf("the other attempt ended too: %v", err)
	default:
	}
}

// Shutdown: tasks that finish within the grace period are recorded; the
// rest are cancelled and their leases released at once (no expiry wait).
func TestShutdownReleasesLeases(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	s := claims.New(db)
	started := make(chan int64, 2)
	finish := make(chan struct{})
	stop := runPool(t, db, worker.Config{ID: "leaving", Grace: 300 * time.Millisecond, Lease: time.Hour,
		Handlers: map[string]worker.Handler{
			"quick": worker.HandlerFunc(func(ctx context.Context, task *agentledger.Task) (json.RawMessage, error) {
				started <- task.ID
				<-finish
				return json.RawMessage(`{"done":true}`), nil
			}),
			"slow": worker.HandlerFunc(func(ctx context.Context, task *agentledger.Task) (json.RawMessage, error) {
				started <- task.ID
				<-ctx.Done()
				return nil, ctx.Err()
			}),
		}})
	quick := enqueue(t, s, "quick", `{}`)
	slow := enqueue(t, s, "slow", `{}`)
	recv(t, started, "first start")
	recv(t, started, "second start")
	go func() { close(finish) }() // quick finishes during the grace period
	stop()

	if got := waitState(t, s, quick.ID, agentledger.StateSucceeded); string(got.Result) != `{"done": true}` {
		t.Fatalf("quick result %s", got.Result)
	}
	got, _ := s.Get(ctx, "", slow.ID)
	if got.State != agentledger.StateQueued || got.LeaseOwner != "" || got.Attempt != 0 {
		t.Fatalf("slow after shutdown: state %s owner %q attempt %d; want queued, released", got.State, got.LeaseOwner, got.Attempt)
	}
	atts, _ := s.Attempts(ctx, slow.ID)
	if len(atts) != 1 || atts[0].Outcome != agentledger.OutcomeReleased || atts[0].Worker != "leaving" {
		t.Fatalf("attempts: %+v", atts)
	}
	// Another worker can claim it at once, without waiting for an expiry.
	next, err := s.Claim(ctx, claims.ClaimParams{Queue: "default", Worker: "next", Limit: 5, Lease: time.Minute})
	if err != nil || len(next) != 1 || next[0].ID != slow.ID {
		t.Fatalf("claim after release: %v %v", next, err)
	}
}
