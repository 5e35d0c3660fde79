package ledger_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/tools"
)

// Keyed records of many attempts performing at once go out several to a
// statement, and each caller still gets its own outcome: a live attempt
// its effect recorded once with the result it produced, a zombie (a stale
// token) ErrLeaseLost with nothing recorded, and two performances of one
// step by the same attempt the one record that landed first.
func TestKeyedRecordsBatched(t *testing.T) {
	t.Parallel()
	ctx, _ := leased()
	e := newEnv(t)
	const n = 120
	got := e.claimMany(ctx, n)
	db := &statementLog{Pool: e.DB}
	l := ledger.New(db)

	type call struct {
		a      ledger.Attempt
		zombie bool
		twin   int // >= 0: another call of the same attempt and step
	}
	var calls []call
	for i, task := range got {
		a := tools.AttemptOf(task)
		switch i % 6 {
		case 1, 4: // a zombie: its token is not the task's
			f := a.Fence.(claims.LeaseFence)
			f.Token += 1000
			a.Fence = f
			calls = append(calls, call{a: a, zombie: true, twin: -1})
		case 2: // the same step twice, at once
			calls = append(calls, call{a: a, twin: len(calls) + 1}, call{a: a, twin: len(calls)})
		default:
			calls = append(calls, call{a: a, twin: -1})
		}
	}

	type answer struct {
		res ledger.Result
		err error
	}
	answers := make([]answer, len(calls))
	atOnce(len(calls), func(i int) {
		c := calls[i]
		perform := func(context.Context, ledger.Call) (ledger.Result, error) {
			return ledger.Result{Status: 201, Body: json.RawMessage(fmt.Sprintf(`{"task": %d, "call": %d}`, c.a.TaskID, i))}, nil
		}
		res, err := l.Do(ctx, c.a, effect(ledger.Keyed, "tool/0", fmt.Sprintf(`{"task":%d}`, c.a.TaskID), perform))
		answers[i] = answer{res, err}
	})

	for i, c := range calls {
		res, err := answers[i].res, answers[i].err
		if c.zombie {
			if !errors.Is(err, agentledger.ErrLeaseLost) {
				t.Errorf("zombie of task %d: %+v %v, want ErrLeaseLost", c.a.TaskID, res, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("task %d: %v", c.a.TaskID, err)
			continue
		}
		var body struct{ Task, Call int64 }
		if err := json.Unmarshal(res.Body, &body); err != nil || body.Task != c.a.TaskID {
			t.Errorf("task %d was answered %s (%v): another task's outcome", c.a.TaskID, res.Body, err)
		}
		if c.twin >= 0 && string(res.Body) != string(answers[c.twin].res.Body) {
			t.Errorf("task %d's two performances of one step answered %s and %s: want the one record", c.a.TaskID,
				res.Body, answers[c.twin].res.Body)
		}
	}
	for _, c := range calls {
		j, err := e.Ledger.Journal(ctx, c.a.TaskID, c.a.Generation)
		want := 1
		if c.zombie {
			want = 0
		}
		if err != nil || len(j) != want || (want == 1 && j[0].State != ledger.StateCompleted) {
			t.Errorf("task %d (zombie %v): journal %+v %v, want %d completed", c.a.TaskID, c.zombie, j, err, want)
		}
	}
	statements := 0
	for _, name := range db.all() {
		if name == "ledger.insertKeyedOutcomes" {
			statements++
		}
	}
	if records := len(calls); statements == 0 || statements >= records {
		t.Errorf("%d records in %d statements: want several a statement", records, statements)
	}
	t.Logf("%d records in %d statements", len(calls), statements)
}

// A statement of several keyed records whose answer is lost after its
// commit (a failover) is sent again; the rows that landed the first time
// are found by landed, and every caller still gets its own outcome,
// recorded once.
func TestKeyedBatchAnsweredAfterAFailover(t *testing.T) {
	t.Parallel()
	ctx, _ := leased()
	e := newEnv(t)
	const n = 60
	got := e.claimMany(ctx, n)
	db := &lossyDB{Pool: e.DB, commit: true, batchOnly: true}
	db.cuts.Store(1)
	l := ledger.New(db)
	bodies := make([]string, n)
	errs := make([]error, n)
	atOnce(len(got), func(i int) {
		task := got[i]
		perform := func(context.Context, ledger.Call) (ledger.Result, error) {
			return ledger.Result{Body: json.RawMessage(fmt.Sprintf(`{"task": %d}`, task.ID))}, nil
		}
		res, err := l.Do(ctx, tools.AttemptOf(task), effect(ledger.Keyed, "tool/0", `{}`, perform))
		bodies[i], errs[i] = string(res.Body), err
	})
	if db.cuts.Load() > 0 {
		t.Fatal("no statement of several records lost its answer: the test did not test")
	}
	for i, task := range got {
		if want := fmt.Sprintf(`{"task": %d}`, task.ID); errs[i] != nil || bodies[i] != want {
			t.Errorf("task %d: %s %v, want %s", task.ID, bodies[i], errs[i], want)
		}
		j, err := e.Ledger.Journal(ctx, task.ID, task.Generation)
		if err != nil || len(j) != 1 || j[0].State != ledger.StateCompleted {
			t.Errorf("task %d: journal %+v %v, want one completed record", task.ID, j, err)
		}
	}
}

// A record the database refuses (here a step path with a NUL byte, which
// text cannot hold) fails its own call only: the statement it was sent
// with wrote nothing, so the others are written again, each alone.
func TestKeyedBatchIsolatesARefusedRecord(t *testing.T) {
	t.Parallel()
	ctx, _ := leased()
	e := newEnv(t)
	const n = 60
	got := e.claimMany(ctx, n)
	l := ledger.New(e.DB)
	errs := make([]error, n)
	atOnce(len(got), func(i int) {
		task := got[i]
		step := "tool/0"
		if i%10 == 5 {
			step = "tool/\x000"
		}
		perform := func(context.Context, ledger.Call) (ledger.Result, error) {
			return ledger.Result{Body: json.RawMessage(`{}`)}, nil
		}
		_, errs[i] = l.Do(ctx, tools.AttemptOf(task), effect(ledger.Keyed, step, `{}`, perform))
	})
	for i, task := range got {
		j, jerr := e.Ledger.Journal(ctx, task.ID, task.Generation)
		if i%10 == 5 {
			if errs[i] == nil || errors.Is(errs[i], agentledger.ErrLeaseLost) || len(j) != 0 {
				t.Errorf("task %d, its step path refused: %v, journal %+v; want its own error and no record", task.ID, errs[i], j)
			}
			continue
		}
		if errs[i] != nil || jerr != nil || len(j) != 1 {
			t.Errorf("task %d: %v, journal %+v %v; want its effect recorded once", task.ID, errs[i], j, jerr)
		}
	}
}

// claimMany enqueues n tasks and claims them all for one worker.
func (e *env) claimMany(ctx context.Context, n int) []*agentledger.Task {
	for range n {
		e.task()
	}
	got, err := e.Claims.Claim(ctx, claims.ClaimParams{Queue: "default", Worker: "w", Limit: n, Lease: time.Minute})
	if err != nil || len(got) != n {
		e.T.Fatalf("claimed %d of %d: %v", len(got), n, err)
	}
	return got
}

// atOnce runs f(0) … f(n-1) in goroutines released together, so that their
// records queue while one statement runs, and waits for them all.
func atOnce(n int, f func(i int)) {
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			f(i)
		})
	}
	close(start)
	wg.Wait()
}
