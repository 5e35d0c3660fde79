package schedule_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentledger/agentledger/internal/test/testdb"
	"github.com/agentledger/agentledger/schedule"
)

// clock is a pinned clock the test moves by hand.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock(t time.Time) *clock { return &clock{t: t} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Set(t time.Time) {
	c.mu.Lock()
	c.t = t
	c.mu.Unlock()
}

// env is one test's database with a store and a scheduler on a pinned clock.
type env struct {
	t     *testing.T
	db    *pgxpool.Pool
	clock *clock
	store *schedule.Store
	sched *schedule.Scheduler
}

func newEnv(t *testing.T, now time.Time) *env {
	t.Helper()
	e := &env{t: t, db: testdb.New(t), clock: newClock(now)}
	e.store = schedule.NewStore(e.db)
	e.store.Now = e.clock.Now
	e.sched = e.scheduler(schedule.Config{})
	return e
}

// scheduler returns another scheduler on the env's database and clock.
func (e *env) scheduler(cfg schedule.Config) *schedule.Scheduler {
	e.t.Helper()
	cfg.Now = e.clock.Now
	s, err := schedule.NewScheduler(e.db, cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	return s
}

func (e *env) add(sc schedule.Schedule) schedule.Schedule {
	e.t.Helper()
	got, err := e.store.Add(context.Background(), sc)
	if err != nil {
		e.t.Fatalf("add %s: %v", sc.Name, err)
	}
	return got
}

func (e *env) get(name string) schedule.Schedule {
	e.t.Helper()
	got, err := e.store.Get(context.Background(), name)
	if err != nil {
		e.t.Fatalf("get %s: %v", name, err)
	}
	return got
}

// runOnce fires what is due at the clock's time and returns how many
// schedules fired.
func (e *env) runOnce(s *schedule.Scheduler) int {
	e.t.Helper()
	n, err := s.RunOnce(context.Background())
	if err != nil {
		e.t.Fatalf("run once: %v", err)
	}
	return n
}

// cronTask is a task a schedule enqueued.
type cronTask struct {
	ID      int64
	Key     string
	Kind    string
	Payload string
}

// tasks returns the tasks of schedule name, by submission key.
func tasks(t *testing.T, db *pgxpool.Pool, name string) []cronTask {
	t.Helper()
	rows, err := db.Query(context.Background(), `
		SELECT id, submission_key, kind, payload::text FROM tasks
		WHERE submission_key LIKE 'cron:' || $1 || ':%' ORDER BY submission_key, id`, name)
	if err != nil {
		t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[cronTask])
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func keys(ts []cronTask) []string {
	out := []string{}
	for _, t := range ts {
		out = append(out, t.Key)
	}
	return out
}

func utc(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

func timeIs(p *time.Time, want string) bool {
	if want == "" {
		return p == nil
	}
	return p != nil && p.Equal(utc(want))
}

func show(p *time.Time) string {
	if p == nil {
		return "nil"
	}
	return p.UTC().Format(time.RFC3339)
}
