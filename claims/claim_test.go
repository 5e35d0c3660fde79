package claims_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/internal/test/testdb"
)

// I1 under contention: 32 goroutines over 4 pools claim 10,000 tasks in
// batches while leases hold; every task is claimed exactly once and finished
// exactly once.
func TestI1ClaimContention(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := testdb.URL(t)
	const tasks, pools, perPool = 10_000, 4, 8

	seed := claims.New(testdb.Open(t, url))
	batch := make([]claims.EnqueueParams, 0, 1000)
	for i := range tasks {
		batch = append(batch, claims.EnqueueParams{Kind: "noop", Priority: int16(i % 3)})
		if len(batch) == cap(batch) {
			if _, err := seed.EnqueueBatch(ctx, batch); err != nil {
				t.Fatal(err)
			}
			batch = batch[:0]
		}
	}

	var claimedBy sync.Map // task id → worker
	var dupes, finished atomic.Int64
	var wg sync.WaitGroup
	errc := make(chan error, pools*perPool)
	for p := range pools {
		cfg, err := pgxpool.ParseConfig(url)
		if err != nil {
			t.Fatal(err)
		}
		cfg.MaxConns = perPool
		pool, err := pgxpool.NewWithConfig(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(pool.Close)
		s := claims.New(pool)
		for g := range perPool {
			worker := fmt.Sprintf("p%d-g%d", p, g)
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					got, err := s.Claim(ctx, claims.ClaimParams{Queue: "default", Worker: worker, Limit: 1 + g%5*10, Lease: time.Hour})
					if err != nil {
						errc <- err
						return
					}
					if len(got) == 0 {
						return
					}
					done := make([]claims.Success, len(got))
					for i, task := range got {
						if prev, loaded := claimedBy.LoadOrStore(task.ID, worker); loaded {
							dupes.Add(1)
							t.Errorf("task %d claimed by %s while %v held it", task.ID, worker, prev)
						}
						if task.LeaseToken <= 0 || task.Attempt != 1 {
							t.Errorf("task %d: token %d attempt %d, want a token and attempt 1", task.ID, task.LeaseToken, task.Attempt)
						}
						done[i] = claims.Success{Lease: claims.LeaseOf(task)}
					}
					lost, err := s.SucceedMany(ctx, done)
					if err != nil {
						errc <- err
						return
					}
					if len(lost) > 0 {
						t.Errorf("%s lost %d leases it held", worker, len(lost))
					}
					finished.Add(int64(len(got) - len(lost)))
				}
			}()
		}
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	n := 0
	claimedBy.Range(func(any, any) bool { n++; return true })
	if n != tasks || finished.Load() != tasks || dupes.Load() != 0 {
		t.Fatalf("claimed %d distinct, finished %d, duplicate claims %d; want %d, %d, 0", n, finished.Load(), dupes.Load(), tasks, tasks)
	}
	var notDone, attempts int
	pool := testdb.Open(t, url)
	if err := pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE state <> 'succeeded') FROM tasks`).Scan(&notDone); err != nil {
		t.Fatal(err)
	}
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM attempt_records WHERE outcome = 'succeeded'`).Scan(&attempts); err != nil {
		t.Fatal(err)
	}
	if notDone != 0 || attempts != tasks {
		t.Fatalf("%d tasks not succeeded, %d succeeded attempts; want 0 and %d", notDone, attempts, tasks)
	}
}

// I2 zombie: A's lease expires, B claims; every write A still makes returns
// ErrLeaseLost and changes nothing; the attempts table shows both.
func TestI2ZombieWritesAreFenced(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newClock()
	s := pinnedStore(t, c)
	task := enqueue(t, s, claims.EnqueueParams{Kind: "noop"})

	a := claimOne(t, s, "worker-a", 30*time.Second)
	c.Advance(10 * time.Second)
	claimNone(t, s, "worker-b") // A's lease still holds (I1)

	c.Advance(21 * time.Second) // A's lease has expired
	b := claimOne(t, s, "worker-b", 30*time.Second)
	if b.ID != task.ID || b.LeaseToken <= a.LeaseToken || b.Attempt != 2 {
		t.Fatalf("B got task %d token %d attempt %d; A had token %d", b.ID, b.LeaseToken, b.Attempt, a.LeaseToken)
	}
	before := get(t, s, task.ID)

	la := claims.LeaseOf(a)
	if res, err := s.Heartbeat(ctx, []agentledger.Lease{la}, time.Minute); err != nil || len(res.Lost) != 1 {
		t.Errorf("A heartbeat: lost=%v err=%v, want lost", res.Lost, err)
	}
	if err := s.Succeed(ctx, la, raw(`{"by":"a"}`)); !errors.Is(err, agentledger.ErrLeaseLost) {
		t.Errorf("A succeed: %v, want ErrLeaseLost", err)
	}
	if _, err := s.Fail(ctx, claims.Failure{Lease: la, Error: "a failed"}); !errors.Is(err, agentledger.ErrLeaseLost) {
		t.Errorf("A fail: %v, want ErrLeaseLost", err)
	}
	if _, err := s.Fail(ctx, claims.Failure{Lease: la, Error: "a failed", Final: true}); !errors.Is(err, agentledger.ErrLeaseLost) {
		t.Errorf("A fail final: %v, want ErrLeaseLost", err)
	}
	if err := s.Release(ctx, la); !errors.Is(err, agentledger.ErrLeaseLost) {
		t.Errorf("A release: %v, want ErrLeaseLost", err)
	}
	if err := s.Cancelled(ctx, la, "x"); !errors.Is(err, agentledger.ErrLeaseLost) {
		t.Errorf("A cancelled: %v, want ErrLeaseLost", err)
	}
	after := get(t, s, task.ID)
	if after.State != before.State || after.LeaseToken != before.LeaseToken ||
		!after.LeaseExpiresAt.Equal(*before.LeaseExpiresAt) || after.LeaseOwner != "worker-b" ||
		after.Result != nil || after.LastError != "" || !after.UpdatedAt.Equal(before.UpdatedAt) {
		t.Fatalf("zombie writes changed the task:\nbefore %+v\nafter  %+v", before, after)
	}

	// B, the current holder, can finish.
	if err := s.Succeed(ctx, claims.LeaseOf(b), raw(`{"by":"b"}`)); err != nil {
		t.Fatalf("B succeed: %v", err)
	}
	atts, err := s.Attempts(ctx, task.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(atts) != 2 {
		t.Fatalf("%d attempts recorded, want 2: %+v", len(atts), atts)
	}
	if atts[0].Worker != "worker-a" || atts[0].Outcome != agentledger.OutcomeLeaseExpired || atts[0].Token != a.LeaseToken || atts[0].EndedAt == nil {
		t.Errorf("attempt 1 = %+v", atts[0])
	}
	if atts[1].Worker != "worker-b" || atts[1].Outcome != agentledger.OutcomeSucceeded || atts[1].Token != b.LeaseToken || atts[1].Attempt != 2 {
		t.Errorf("attempt 2 = %+v", atts[1])
	}
}

func TestHeartbeatExtendsLease(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newClock()
	s := pinnedStore(t, c)
	enqueue(t, s, claims.EnqueueParams{})
	a := claimOne(t, s, "a", 30*time.Second)
	for range 5 { // 100s of work, renewed every 20s: never claimable
		c.Advance(20 * time.Second)
		res, err := s.Heartbeat(ctx, []agentledger.Lease{claims.LeaseOf(a)}, 30*time.Second)
		if err != nil || len(res.Lost) != 0 || len(res.Cancel) != 0 {
			t.Fatalf("heartbeat: %+v %v", res, err)
		}
		claimNone(t, s, "b")
	}
	got := get(t, s, a.ID)
	if want := c.Now().Add(30 * time.Second); !got.LeaseExpiresAt.Equal(want) {
		t.Fatalf("lease expires %v, want %v", got.LeaseExpiresAt, want)
	}
}

// Retryable failures back off by the delay given (run_at pinned to the
// database clock); after max_attempts the task is dead with its error kept.
func TestFailRetriesThenDead(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newClock()
	s := pinnedStore(t, c)
	task := enqueue(t, s, claims.EnqueueParams{MaxAttempts: 3})
	b := agentledger.Backoff{Base: time.Second, Max: time.Minute, Jitter: 0.5, Rand: func() float64 { return 1 }}

	for attempt := int32(1); attempt <= 3; attempt++ {
		got := claimOne(t, s, "w", time.Minute)
		if got.Attempt != attempt {
			t.Fatalf("attempt = %d, want %d", got.Attempt, attempt)
		}
		delay := b.Delay(attempt)
		st, err := s.Fail(ctx, claims.Failure{Lease: claims.LeaseOf(got), Error: fmt.Sprintf("boom %d", attempt), Delay: delay})
		if err != nil {
			t.Fatal(err)
		}
		after := get(t, s, task.ID)
		if attempt < 3 {
			if st != agentledger.StateRetrying || !after.RunAt.Equal(c.Now().Add(delay)) {
				t.Fatalf("after attempt %d: state %s run_at %v, want retrying at %v", attempt, st, after.RunAt, c.Now().Add(delay))
			}
			c.Advance(delay - time.Millisecond)
			claimNone(t, s, "early")
			c.Advance(time.Millisecond)
			continue
		}
		if st != agentledger.StateDead || after.State != agentledger.StateDead || after.LastError != "boom 3" || after.FinishedAt == nil {
			t.Fatalf("after last attempt: %+v", after)
		}
	}
	claimNone(t, s, "w")
	atts, _ := s.Attempts(ctx, task.ID)
	if len(atts) != 3 || atts[0].Outcome != agentledger.OutcomeRetry || atts[2].Outcome != agentledger.OutcomeDead || atts[2].Error != "boom 3" {
		t.Fatalf("attempts: %+v", atts)
	}
}

func TestFailFinalIsDeadAtOnce(t *testing.T) {
	t.Parallel()
	c := newClock()
	s := pinnedStore(t, c)
	task := enqueue(t, s, claims.EnqueueParams{})
	got := claimOne(t, s, "w", time.Minute)
	st, err := s.Fail(context.Background(), claims.Failure{Lease: claims.LeaseOf(got), Error: "bad input", Final: true})
	if err != nil || st != agentledger.StateDead {
		t.Fatalf("state %s err %v", st, err)
	}
	if after := get(t, s, task.ID); after.Attempt != 1 || after.LastError != "bad input" {
		t.Fatalf("%+v", after)
	}
}

func TestReleaseRequeuesWithoutCountingTheAttempt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newClock()
	s := pinnedStore(t, c)
	task := enqueue(t, s, claims.EnqueueParams{})
	a := claimOne(t, s, "a", time.Minute)
	if err := s.Release(ctx, claims.LeaseOf(a)); err != nil {
		t.Fatal(err)
	}
	b := claimOne(t, s, "b", time.Minute) // at once, no lease expiry needed
	if b.ID != task.ID || b.Attempt != 1 || b.LeaseToken != a.LeaseToken+1 {
		t.Fatalf("after release: attempt %d token %d", b.Attempt, b.LeaseToken)
	}
	atts, _ := s.Attempts(ctx, task.ID)
	if len(atts) != 2 || atts[0].Outcome != agentledger.OutcomeReleased {
		t.Fatalf("attempts: %+v", atts)
	}
}

func TestCancel(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newClock()
	s, op := pinnedWithOperator(t, c)

	queued := enqueue(t, s, claims.EnqueueParams{Priority: 5})
	got, err := op.Cancel(ctx, "", queued.ID)
	if err != nil || got.State != agentledger.StateCancelled || got.FinishedAt == nil {
		t.Fatalf("cancel queued: %+v %v", got, err)
	}
	if _, err := op.Cancel(ctx, "", queued.ID); !errors.Is(err, agentledger.ErrConflict) {
		t.Fatalf("cancel twice: %v, want ErrConflict", err)
	}
	if _, err := op.Cancel(ctx, "", 999999); !errors.Is(err, agentledger.ErrNotFound) {
		t.Fatalf("cancel unknown: %v, want ErrNotFound", err)
	}

	running := enqueue(t, s, claims.EnqueueParams{})
	if _, err := op.Cancel(ctx, "other-tenant", running.ID); !errors.Is(err, agentledger.ErrNotFound) {
		t.Fatalf("cancel as another tenant: %v, want ErrNotFound", err)
	}
	a := claimOne(t, s, "a", time.Minute)
	got, err = op.Cancel(ctx, "default", running.ID)
	if err != nil || got.State != agentledger.StateRunning || got.CancelRequested == nil {
		t.Fatalf("cancel running: %+v %v", got, err)
	}
	res, err := s.Heartbeat(ctx, []agentledger.Lease{claims.LeaseOf(a)}, time.Minute)
	if err != nil || len(res.Cancel) != 1 {
		t.Fatalf("heartbeat after cancel: %+v %v", res, err)
	}
	if err := s.Cancelled(ctx, claims.LeaseOf(a), "cancelled by operator"); err != nil {
		t.Fatal(err)
	}
	if after := get(t, s, running.ID); after.State != agentledger.StateCancelled {
		t.Fatalf("state %s", after.State)
	}
	atts, _ := s.Attempts(ctx, running.ID)
	if len(atts) != 1 || atts[0].Outcome != agentledger.OutcomeCancelled {
		t.Fatalf("attempts: %+v", atts)
	}
}

func TestListFiltersAndPages(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := pinnedStore(t, newClock())
	for i := range 7 {
		enqueue(t, s, claims.EnqueueParams{Kind: []string{"a", "b"}[i%2], Queue: "q"})
	}
	page1, err := s.List(ctx, claims.ListParams{Kind: "a", Limit: 3})
	if err != nil || len(page1) != 3 {
		t.Fatalf("page1: %d %v", len(page1), err)
	}
	page2, _ := s.List(ctx, claims.ListParams{Kind: "a", Limit: 3, Before: page1[2].ID})
	if len(page2) != 1 || page2[0].ID >= page1[2].ID {
		t.Fatalf("page2: %+v", page2)
	}
	if _, err := s.List(ctx, claims.ListParams{States: []agentledger.TaskState{"nope"}}); !errors.Is(err, agentledger.ErrInvalid) {
		t.Fatalf("bad state: %v", err)
	}
}

// A task whose every attempt loses its lease (a poison task that crashes its
// workers) is dead-lettered after max_attempts instead of claimed forever.
func TestExpiredLastAttemptIsDead(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newClock()
	s := pinnedStore(t, c)
	task := enqueue(t, s, claims.EnqueueParams{MaxAttempts: 2})
	claimOne(t, s, "crashes-1", time.Minute)
	c.Advance(2 * time.Minute)
	second := claimOne(t, s, "crashes-2", time.Minute)
	if second.Attempt != 2 {
		t.Fatalf("attempt %d", second.Attempt)
	}
	c.Advance(2 * time.Minute)
	claimNone(t, s, "w")
	got := get(t, s, task.ID)
	if got.State != agentledger.StateDead || got.LastError == "" || got.LeaseOwner != "" || got.FinishedAt == nil {
		t.Fatalf("after the last lease expired: %+v", got)
	}
	atts, _ := s.Attempts(ctx, task.ID)
	if len(atts) != 2 || atts[0].Outcome != agentledger.OutcomeLeaseExpired || atts[1].Outcome != agentledger.OutcomeLeaseExpired || atts[1].EndedAt == nil {
		t.Fatalf("attempts: %+v", atts)
	}
}
