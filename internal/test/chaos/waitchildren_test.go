package chaos

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/agentledgertest/downstream"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/operator"
	"github.com/agentledger/agentledger/saga"
	"github.com/agentledger/agentledger/waits"
	"github.com/agentledger/agentledger/worker"
)

// fanOutKind is a Go kind of the ticket daemon (runTicketDaemon): a parent
// that starts {"children": n} child tasks, each opening one ticket, waits
// for them all, then opens a ticket saying it resumed.
const fanOutKind = "fanout"

// fanOut is fanOutKind's handler. Every call goes through the ledger
// (saga.Call), so each attempt — after a wake or a kill — replays the
// children it started and the wait, once finished, from the journal.
var fanOut = worker.HandlerFunc(func(ctx context.Context, t *agentledger.Task) (json.RawMessage, error) {
	var p struct {
		Children int `json:"children"`
	}
	if err := json.Unmarshal(t.Payload, &p); err != nil {
		return nil, agentledger.Permanent(err)
	}
	for i := range p.Children {
		child := map[string]any{"kind": "steps", "payload": map[string]any{"steps": []any{
			map[string]any{"tool": "open_ticket", "args": map[string]string{"title": sprintf("child %d of task %d", i, t.ID)}}}}}
		if _, err := saga.Call(ctx, t, sprintf("child/%d", i), "create_task", child, nil); err != nil {
			return nil, err
		}
	}
	res, err := saga.Call(ctx, t, "children", waits.ToolChildren, map[string]string{"timeout": "10m"}, nil)
	if err != nil {
		return nil, err // a deferral while they run: the task parks
	}
	if _, err := saga.Call(ctx, t, "resumed", "open_ticket", map[string]string{"title": sprintf("task %d resumed", t.ID)}, nil); err != nil {
		return nil, err
	}
	return res.Body, nil
})

// TestParentWaitsForHundredChildrenAcrossKills is issue 36's drill: a
// parent (a Go kind) starts 100 children and waits for them all, on three
// daemons each SIGKILLed once while the children run and started again.
// The parent resumes once, with the 100 children's results; each child
// opened its ticket once, and the parent its own once.
func TestParentWaitsForHundredChildrenAcrossKills(t *testing.T) {
	skipShort(t)
	t.Parallel()
	const children = 100
	w := newWorld(t)
	ctx := context.Background()
	tickets := downstream.New()
	t.Cleanup(tickets.Close)
	var mu sync.Mutex
	latency := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 36))
	tickets.SetDelay(func() time.Duration { // children stay in flight while daemons die
		mu.Lock()
		defer mu.Unlock()
		return time.Duration(100+latency.IntN(300)) * time.Millisecond
	})

	r, err := claims.New(w.db).Enqueue(ctx, claims.EnqueueParams{Kind: fanOutKind,
		Payload: json.RawMessage(sprintf(`{"children": %d}`, children)), MaxAttempts: 10})
	must(t, err)
	parent := r.Task.ID

	self, err := os.Executable()
	must(t, err)
	var daemons []*daemon
	for _, name := range []string{"d1", "d2", "d3"} {
		d := &daemon{name: name, bin: self, args: []string{"-test.run=^$"}, log: filepath.Join(w.dir, name+".log"),
			env: []string{"DATABASE_URL=" + w.url, "AGENTLEDGER_STATE_DIR=" + filepath.Join(w.dir, "state-"+name),
				ticketDaemonEnv + "=" + tickets.URL}}
		must(t, d.start())
		daemons = append(daemons, d)
	}
	defer stopAll(t, daemons)

	// A SIGKILL of each daemon in turn while the children run, each
	// started again at once (as a supervisor would).
	for i, d := range daemons {
		at := int64((i + 1) * children / 4)
		waitFor(t, sprintf("%d children's tickets", at), 2*time.Minute, func() (bool, string) {
			return tickets.Effects() >= at, sprintf("%d tickets, parent %s", tickets.Effects(), taskState(t, w, parent))
		})
		d.kill()
		must(t, d.start())
	}
	waitFor(t, "the parent succeeded", 3*time.Minute, func() (bool, string) {
		st := taskState(t, w, parent)
		if st == "dead" || st == "needs_attention" {
			t.Fatalf("the parent is %s", st)
		}
		return st == "succeeded", sprintf("parent %s, %d tickets", st, tickets.Effects())
	})
	for _, d := range daemons {
		d.stop()
	}

	var kids, succeeded int
	must(t, w.db.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE state = 'succeeded') FROM tasks WHERE parent_id = $1`,
		parent).Scan(&kids, &succeeded))
	if kids != children || succeeded != children {
		t.Errorf("the parent has %d children, %d succeeded; want %d, all", kids, succeeded, children)
	}
	var result []byte
	must(t, w.db.QueryRow(ctx, `SELECT result FROM tasks WHERE id = $1`, parent).Scan(&result))
	var res waits.ChildrenResult
	must(t, json.Unmarshal(result, &res))
	seen := map[int64]bool{}
	for _, c := range res.Children {
		if c.State != string(agentledger.StateSucceeded) || len(c.Result) == 0 || seen[c.TaskID] {
			t.Errorf("child %+v in the parent's result (seen before: %v)", c, seen[c.TaskID])
		}
		seen[c.TaskID] = true
	}
	if len(seen) != children {
		t.Errorf("the parent's result holds %d children, want %d", len(seen), children)
	}
	ws, err := waits.NewStore(w.db).List(ctx, waits.ListParams{TaskID: parent,
		States: []string{waits.Waiting, waits.Done, waits.TimedOut, waits.Ended, waits.Cancelled}})
	must(t, err)
	if len(ws) != 1 || ws[0].State != waits.Done || ws[0].EndedBy != "children" {
		t.Errorf("the parent's waits %+v; want one, done by its children", ws)
	}
	for _, path := range []string{"call/children", "call/resumed"} {
		var n int
		var state string
		must(t, w.db.QueryRow(ctx, `SELECT count(*), coalesce(min(state), '') FROM ledger WHERE task_id = $1 AND step_path = $2`,
			parent, path).Scan(&n, &state))
		if n != 1 || state != "completed" {
			t.Errorf("the parent's %s: %d ledger rows, %s; want one, completed", path, n, state)
		}
	}
	onceEach(t, "tickets", tickets, children+1)
	resumed := 0
	for _, rec := range tickets.Records() {
		if strings.Contains(string(rec.Body), "resumed") {
			resumed++
		}
	}
	if resumed != 1 {
		t.Errorf("the parent resumed %d times, want once", resumed)
	}
	outcomes := map[string]int{}
	rows, err := w.db.Query(ctx, `SELECT outcome, count(*) FROM attempt_records WHERE task_id = $1 GROUP BY outcome`, parent)
	must(t, err)
	for rows.Next() {
		var outcome string
		var n int
		must(t, rows.Scan(&outcome, &n))
		outcomes[outcome] = n
	}
	must(t, rows.Err())
	var lost int
	must(t, w.db.QueryRow(ctx, `SELECT count(*) FROM attempt_records WHERE outcome = 'lease_expired'`).Scan(&lost))
	t.Logf("%d children, %d tickets from %d requests; the parent's attempt records by outcome %v (a run of deferrals is recorded once); %d attempts lost with killed daemons",
		kids, tickets.Effects(), tickets.Hits(), outcomes, lost)
}

// TestCancelParentCancelsWaitingChildren is issue 36's drill: cancelling
// a parent that waits for its children cancels the children still
// waiting, and their waits; a child that finished stays as it ended. A
// signal sent afterwards for a cancelled child is kept, not consumed.
func TestCancelParentCancelsWaitingChildren(t *testing.T) {
	skipShort(t)
	t.Parallel()
	w := newWorld(t)
	ctx := context.Background()
	child := func(n int) string {
		return sprintf(`{"tool":"create_task","args":{"kind":"steps","payload":{"steps":[
			{"tool":"wait_for_signal","args":{"signal":"approved","key":"part-%d","timeout":"1h"}}]}}}`, n)
	}
	payload := sprintf(`{"steps":[%s,%s,%s,{"tool":"create_task","args":{"kind":"echo","payload":{"n":4}}},
		{"tool":"wait_for_children","args":{}}]}`, child(1), child(2), child(3))
	r, err := claims.New(w.db).Enqueue(ctx, claims.EnqueueParams{Kind: "steps", Payload: json.RawMessage(payload), MaxAttempts: 3})
	must(t, err)
	parent := r.Task.ID

	d := agentdSlot(w, "d1", "http://127.0.0.1:1") // no step of this drill reaches out
	must(t, d.start())
	defer stopAll(t, []*daemon{d})
	states := func() map[string]int {
		out := map[string]int{}
		rows, err := w.db.Query(ctx, `SELECT kind, state FROM tasks WHERE parent_id = $1`, parent)
		must(t, err)
		defer rows.Close()
		for rows.Next() {
			var kind, state string
			must(t, rows.Scan(&kind, &state))
			out[kind+" "+state]++
		}
		must(t, rows.Err())
		return out
	}
	waitFor(t, "the parent waiting for its children, three of them waiting", time.Minute, func() (bool, string) {
		st, kids := taskState(t, w, parent), states()
		return st == "waiting" && kids["steps waiting"] == 3 && kids["echo succeeded"] == 1, sprintf("parent %s, children %v", st, kids)
	})

	cancelled, err := operator.New(w.db).Cancel(ctx, "", parent)
	must(t, err)
	if cancelled.State != agentledger.StateCancelled {
		t.Fatalf("the parent after its cancel: %s", cancelled.State)
	}
	if kids := states(); kids["steps cancelled"] != 3 || kids["echo succeeded"] != 1 || len(kids) != 2 {
		t.Fatalf("the children after the parent's cancel: %v; want the three waiting cancelled, the echo succeeded", kids)
	}
	var waiting, cancelledWaits int
	must(t, w.db.QueryRow(ctx, `SELECT count(*) FILTER (WHERE w.state = 'waiting'), count(*) FILTER (WHERE w.state = 'cancelled')
		FROM waits w JOIN tasks t ON t.id = w.task_id WHERE t.id = $1 OR t.parent_id = $1`, parent).Scan(&waiting, &cancelledWaits))
	if waiting != 0 || cancelledWaits != 4 {
		t.Fatalf("after the cancel %d waits wait and %d are cancelled; want 0 and 4 (the parent's and three children's)", waiting, cancelledWaits)
	}
	sent, err := waits.NewStore(w.db).Send(ctx, waits.SignalParams{Name: "approved", Key: "part-1", SentBy: "test"})
	must(t, err)
	if sent.Woke != nil || sent.Signal.State != "pending" {
		t.Fatalf("a signal for a cancelled child: %+v, want it kept pending", sent)
	}
	d.stop()
	if st, kids := taskState(t, w, parent), states(); st != "cancelled" || kids["steps cancelled"] != 3 {
		t.Fatalf("after the daemon stopped: parent %s, children %v", st, kids)
	}
}
