package demo_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/approvals"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/daemon"
	"github.com/agentledger/agentledger/internal/demo"
	"github.com/agentledger/agentledger/internal/test/testdaemon"
	"github.com/agentledger/agentledger/internal/test/testdb"
	"github.com/agentledger/agentledger/notify/outbox"
	"github.com/agentledger/agentledger/schedule"
)

// runDemo runs a daemon as agentd --demo does, on a new database: the demo
// API on its listener, the workload seeded before the first claim. It
// returns the API's base URL, the database and what Seed made.
func runDemo(t *testing.T) (string, *pgxpool.Pool, demo.Seeded) {
	t.Helper()
	url := testdb.SmallIDsURL(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	var seeded demo.Seeded
	d := daemon.New(daemon.Config{
		Database:    daemon.Database{URL: url},
		API:         daemon.API{Listener: ln},
		Worker:      daemon.Worker{PollInterval: 50 * time.Millisecond},
		Maintenance: daemon.Maintenance{NoCron: true, NoJanitor: true},
		HTTPTools:   daemon.HTTPTools{AllowedHosts: []string{base}, UnsafeAllowedHosts: []string{base}},
		Hooks: daemon.Hooks{BeforeRun: func(ctx context.Context, db *pgxpool.Pool) (err error) {
			seeded, err = demo.Seed(ctx, db, base)
			return err
		}},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Stdout: io.Discard,
	})
	for pattern, h := range demo.NewServer().Routes() {
		d.Handle(pattern, h)
	}
	testdaemon.Run(t, d)
	return base, testdb.Open(t, url), seeded
}

// waitState polls task id until it is in state want, failing the test
// after 30 s or when the task finished otherwise.
func waitState(t *testing.T, s *claims.Store, id int64, want agentledger.TaskState) *agentledger.Task {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		task, err := s.Get(context.Background(), "", id)
		if err != nil {
			t.Fatal(err)
		}
		if task.State == want {
			return task
		}
		if task.State.Finished() || time.Now().After(deadline) {
			t.Fatalf("task %d is %s (error %q), want %s", id, task.State, task.LastError, want)
		}
		time.Sleep(25 * time.Millisecond) // polling a condition: nothing signals a task's state
	}
}

// The demo's saga charges and reserves, is refused its shipment, and ends
// compensated: the reservation released, then the charge refunded, each
// once as the demo API counts them. Seeding again, at the same address or
// another, finds the same tasks.
func TestSeededSagaIsCompensated(t *testing.T) {
	t.Parallel()
	base, db, seeded := runDemo(t)
	var saga demo.SeededTask
	for _, task := range seeded.Tasks {
		if task.Name == demo.SagaTask {
			saga = task
		}
	}
	if !saga.New || saga.ID != 4 {
		t.Fatalf("the saga was not seeded as task 4: %+v", seeded.Tasks)
	}
	store := claims.New(db)
	task := waitState(t, store, saga.ID, agentledger.StateCompensated)
	if task.Compensation != "failed" {
		t.Errorf("compensation %q, want failed (the shipment was refused)", task.Compensation)
	}
	var res struct {
		Compensations []struct {
			Step   int    `json:"step"`
			Undoes string `json:"undoes"`
			Status int    `json:"status"`
			Body   struct {
				ID     string `json:"id"`
				Status string `json:"status"`
			} `json:"body"`
		} `json:"compensations"`
	}
	if err := json.Unmarshal(task.Result, &res); err != nil || len(res.Compensations) != 2 {
		t.Fatalf("result %s: %v", task.Result, err)
	}
	if c := res.Compensations[0]; c.Undoes != "tool/1" || c.Status != 200 || c.Body.Status != "released" {
		t.Errorf("first compensation %+v, want the release of tool/1", c)
	}
	if c := res.Compensations[1]; c.Undoes != "tool/0" || c.Status != 201 || c.Body.ID != "re_1" {
		t.Errorf("second compensation %+v, want refund re_1 of tool/0", c)
	}
	// The other tasks charged too; the saga's refund and release are the
	// only ones.
	if _, body := call(t, base, "GET", "/demo/charges", "", ""); !strings.Contains(body, `"refunds":1`) {
		t.Errorf("charges count %s, want one refund", body)
	}
	if _, body := call(t, base, "GET", "/demo/reservations", "", ""); body != `{"releases":1,"requests":2,"reservations":1}` {
		t.Errorf("reservations count %s, want one reservation and one release", body)
	}

	for _, at := range []string{base, "http://127.0.0.1:1"} {
		again, err := demo.Seed(context.Background(), db, at)
		if err != nil {
			t.Fatal(err)
		}
		for i, task := range again.Tasks {
			if task.New || task.ID != seeded.Tasks[i].ID {
				t.Errorf("seeding again at %s: %+v, want %+v found", at, task, seeded.Tasks[i])
			}
		}
		if got := again.Tasks[3]; got.Name != demo.SagaTask || got.State != agentledger.StateCompensated {
			t.Errorf("seeding again at %s found the saga %+v", at, got)
		}
	}
	// An operator's changes to the rule and the schedule stand, and a
	// seed says they were made.
	ctx := context.Background()
	if _, err := outbox.NewRules(db).SetEnabled(ctx, demo.RuleName, false); err != nil {
		t.Fatal(err)
	}
	if _, err := schedule.NewStore(db).Pause(ctx, demo.ScheduleName); err != nil {
		t.Fatal(err)
	}
	again, err := demo.Seed(ctx, db, base)
	if err != nil || !again.RuleDisabled || !again.SchedulePaused {
		t.Fatalf("seeding after the rule was disabled and the schedule paused: %+v %v", again, err)
	}
	if rules, _ := outbox.NewRules(db).List(ctx); len(rules) != 1 || !rules[0].Disabled {
		t.Errorf("the seed enabled the rule again: %+v", rules)
	}
}

// The demo's large charge waits for a person: its request is pending and
// nothing is charged; approved, it charges once and succeeds.
func TestSeededChargeWaitsForApproval(t *testing.T) {
	t.Parallel()
	base, db, seeded := runDemo(t)
	last := seeded.Tasks[len(seeded.Tasks)-1]
	if last.Name != demo.ApprovalTask || last.ID != 5 {
		t.Fatalf("the gated charge was not seeded as task 5: %+v", seeded.Tasks)
	}
	ctx := context.Background()
	gates := approvals.NewStore(db)
	var pending []approvals.Request
	for deadline := time.Now().Add(30 * time.Second); len(pending) == 0; {
		var err error
		if pending, err = gates.List(ctx, approvals.ListParams{TaskID: last.ID}); err != nil {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatal("the gated charge asked for no approval within 30 s")
		}
		time.Sleep(25 * time.Millisecond) // polling a condition: nothing signals the request
	}
	store := claims.New(db)
	// The other charges are made by then.
	waitState(t, store, seeded.Tasks[0].ID, agentledger.StateSucceeded)
	waitState(t, store, seeded.Tasks[1].ID, agentledger.StateSucceeded)
	waitState(t, store, saga(t, seeded).ID, agentledger.StateCompensated)
	_, before := call(t, base, "GET", "/demo/charges", "", "")
	if _, won, err := gates.Decide(ctx, approvals.Decision{ID: pending[0].ID, Approve: true, By: "alice", Via: "agentctl"}); err != nil || !won {
		t.Fatal(won, err)
	}
	waitState(t, store, last.ID, agentledger.StateSucceeded)
	_, after := call(t, base, "GET", "/demo/charges", "", "")
	if before == after || !strings.Contains(before, `"charges":3`) || !strings.Contains(after, `"charges":4`) {
		t.Fatalf("charges before the approval %s, after %s: want 3, then 4", before, after)
	}
}

// saga is the seeded saga.
func saga(t *testing.T, s demo.Seeded) demo.SeededTask {
	t.Helper()
	for _, task := range s.Tasks {
		if task.Name == demo.SagaTask {
			return task
		}
	}
	t.Fatal("no saga seeded")
	return demo.SeededTask{}
}
