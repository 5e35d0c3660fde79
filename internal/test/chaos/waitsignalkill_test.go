package chaos

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentledger/agentledger/agentledgertest/downstream"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/waits"
)

// holdKey is the advisory lock a drill holds to stop a transaction of the
// daemon at a chosen statement (holdLedger).
const holdKey = 0x77616974 // "wait"

// TestSignalKilledBetweenConsumeAndRecord is issue 36's drill: the daemon
// is SIGKILLed after a signal was consumed — its wait done, committed —
// and before the ledger recorded the waiting step. Two tasks are caught
// so: one whose signal came before its wait (its own attempt consumed
// it), one whose signal came while it waited (the sender consumed it and
// woke it). A new daemon finds each wait done and records the step once,
// with its signal's payload; the next step's POST happens once, carrying
// it.
//
// How the window is hit, every run: a wait call commits on its own
// connection, then returns its result to the ledger, whose statement
// records the step. A trigger on the ledger (holdLedger) makes that
// recording wait for an advisory lock the drill holds, so the daemon
// stands still inside the window; the drill sees it there — its backend
// waiting for the lock, the wait done, no ledger row visible — and kills
// it. What it held must not land either: a record in a transaction of its
// own would never see its COMMIT, but one statement of its own commits
// without its client, so the held statements fail once the drill lets go
// (release), as they would had the daemon died before sending them.
func TestSignalKilledBetweenConsumeAndRecord(t *testing.T) {
	skipShort(t)
	t.Parallel()
	w := newWorld(t)
	ctx := context.Background()
	down := downstream.New()
	t.Cleanup(down.Close)
	release := holdLedger(t, w, `NEW.operation = 'wait.signal' AND NEW.state = 'completed'`)

	ws, store := waits.NewStore(w.db), claims.New(w.db)
	amounts := map[string]int{"order-1": 1500, "order-2": 2500}
	signal := func(key string) waits.Sent {
		sent, err := ws.Send(ctx, waits.SignalParams{Name: "payment.settled", Key: key,
			Payload: json.RawMessage(sprintf(`{"amount": %d}`, amounts[key])), SentBy: "psp"})
		must(t, err)
		return sent
	}
	submit := func(key string) int64 {
		payload := sprintf(`{"steps":[
			{"tool":"wait_for_signal","args":{"signal":"payment.settled","key":%q,"timeout":"1h"}},
			{"tool":"http_request","args":{"method":"POST","url":"%s/receipts","body":{"order":%q,"paid":"${steps.0.body.amount}"}}}]}`,
			key, down.URL, key)
		r, err := store.Enqueue(ctx, claims.EnqueueParams{Kind: "steps", Payload: json.RawMessage(payload), MaxAttempts: 5})
		must(t, err)
		return r.Task.ID
	}
	early := signal("order-1") // before its wait: kept
	if early.Woke != nil {
		t.Fatalf("the early signal woke wait %d", early.Woke.ID)
	}
	first, second := submit("order-1"), submit("order-2")

	d := agentdSlot(w, "d1", down.URL)
	must(t, d.start())
	defer stopAll(t, []*daemon{d})

	waitFor(t, "the first task held recording its step, the second waiting", time.Minute, func() (bool, string) {
		n := heldAt(t, w)
		st := taskState(t, w, second)
		return n == 1 && st == "waiting", sprintf("%d held, second task %s", n, st)
	})
	late := signal("order-2") // while its wait waits: consumed by the sender
	if late.Woke == nil || late.Woke.TaskID != second {
		t.Fatalf("the late signal woke %+v, want task %d's wait", late.Woke, second)
	}
	waitFor(t, "both tasks held recording their step", time.Minute, func() (bool, string) {
		n := heldAt(t, w)
		return n == 2, sprintf("%d held", n)
	})

	// In the window: each wait done with its signal, consumed; no ledger
	// row for the step; nothing sent downstream.
	inWindow := func(when string) {
		t.Helper()
		for task, sent := range map[int64]waits.Sent{first: early, second: late} {
			all, err := ws.List(ctx, waits.ListParams{TaskID: task, States: []string{waits.Waiting, waits.Done, waits.TimedOut, waits.Ended, waits.Cancelled}})
			must(t, err)
			if len(all) != 1 || all[0].State != waits.Done || all[0].SignalID == nil || *all[0].SignalID != sent.Signal.ID {
				t.Fatalf("%s: task %d's waits %+v; want one, done with signal %d", when, task, all, sent.Signal.ID)
			}
			if s, err := ledgerState(ctx, w, task, "tool/0"); err != nil || s != "" {
				t.Fatalf("%s: task %d's wait step has a ledger row %q (%v)", when, task, s, err)
			}
		}
		if down.Hits() != 0 {
			t.Fatalf("%s: %d requests downstream before the steps were recorded", when, down.Hits())
		}
	}
	inWindow("before the kill")
	d.kill()
	release() // the killed daemon's held writes fail
	inWindow("after the kill")

	must(t, d.start())
	for _, task := range []int64{first, second} {
		waitFor(t, sprintf("task %d succeeded", task), 2*time.Minute, func() (bool, string) {
			st := taskState(t, w, task)
			if st == "dead" || st == "needs_attention" {
				t.Fatalf("task %d is %s", task, st)
			}
			return st == "succeeded", "task " + st
		})
	}
	d.stop()

	for task, sent := range map[int64]waits.Sent{first: early, second: late} {
		key := sent.Signal.Key
		all, err := ws.List(ctx, waits.ListParams{TaskID: task, States: []string{waits.Waiting, waits.Done, waits.TimedOut, waits.Ended, waits.Cancelled}})
		must(t, err)
		if len(all) != 1 || all[0].State != waits.Done || *all[0].SignalID != sent.Signal.ID {
			t.Errorf("task %d's waits %+v; want one, done with signal %d", task, all, sent.Signal.ID)
		}
		var n int
		var state, result string
		must(t, w.db.QueryRow(ctx, `SELECT count(*), min(state), coalesce(min(result::text), '') FROM ledger
			WHERE task_id = $1 AND step_path = 'tool/0'`, task).Scan(&n, &state, &result))
		if n != 1 || state != "completed" || !strings.Contains(result, sprintf(`"amount": %d`, amounts[key])) {
			t.Errorf("task %d's wait step: %d ledger rows, %s, %s; want one, completed with amount %d", task, n, state, result, amounts[key])
		}
		var killed int
		must(t, w.db.QueryRow(ctx, `SELECT count(*) FROM attempt_records WHERE task_id = $1 AND outcome = 'lease_expired'`, task).Scan(&killed))
		if killed != 1 {
			t.Errorf("task %d has %d attempts lost with the daemon, want the one killed", task, killed)
		}
	}
	var consumed int
	must(t, w.db.QueryRow(ctx, `SELECT count(*) FROM signals s JOIN waits w ON w.id = s.wait_id AND w.signal_id = s.id
		WHERE s.state = 'consumed'`).Scan(&consumed))
	if consumed != 2 || rowCount(t, w, "signals") != 2 {
		t.Errorf("%d of %d signals consumed by the wait holding them, want 2 of 2", consumed, rowCount(t, w, "signals"))
	}
	onceEach(t, "receipts", down, 2)
	for _, r := range down.Records() {
		var body struct {
			Order string
			Paid  json.Number
		}
		must(t, json.Unmarshal(r.Body, &body))
		if body.Paid.String() != sprintf("%d", amounts[body.Order]) {
			t.Errorf("the receipt for %s says paid %q, its signal %d", body.Order, body.Paid, amounts[body.Order])
		}
	}
	t.Logf("two signals consumed once each across the SIGKILL; %d receipts from %d requests; daemon starts %d",
		down.Effects(), down.Hits(), d.starts)
}

// holdLedger makes every ledger write matching when (a trigger's WHEN
// condition on NEW) wait, inside its transaction, for an advisory lock
// the drill holds, until release is called; then the writes held fail.
// heldAt counts the transactions waiting so.
func holdLedger(t *testing.T, w *world, when string) (release func()) {
	t.Helper()
	ctx := context.Background()
	_, err := w.db.Exec(ctx, sprintf(`CREATE TABLE drill_released (at timestamptz);
		CREATE FUNCTION drill_hold() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			PERFORM pg_advisory_xact_lock(%d);
			IF EXISTS (SELECT FROM drill_released) THEN
				RAISE EXCEPTION 'drill: its daemon was killed before this write';
			END IF;
			RETURN NEW;
		END $$;
		CREATE TRIGGER drill_hold BEFORE INSERT OR UPDATE ON ledger FOR EACH ROW WHEN (%s) EXECUTE FUNCTION drill_hold()`, holdKey, when))
	must(t, err)
	hold, err := pgx.Connect(ctx, w.url)
	must(t, err)
	t.Cleanup(func() { hold.Close(context.Background()) })
	_, err = hold.Exec(ctx, `SELECT pg_advisory_lock($1)`, holdKey)
	must(t, err)
	return func() {
		_, err := hold.Exec(ctx, `INSERT INTO drill_released VALUES (now())`)
		must(t, err)
		_, err = hold.Exec(ctx, `SELECT pg_advisory_unlock($1)`, holdKey)
		must(t, err)
		// Dropping the trigger waits for the held transactions to end.
		_, err = w.db.Exec(ctx, `DROP TRIGGER drill_hold ON ledger`)
		must(t, err)
	}
}

// heldAt is the number of transactions holdLedger holds.
func heldAt(t *testing.T, w *world) int {
	var n int
	must(t, w.db.QueryRow(context.Background(), `SELECT count(*) FROM pg_locks
		WHERE locktype = 'advisory' AND NOT granted AND classid = 0 AND objid = $1`, holdKey).Scan(&n))
	return n
}

// agentdSlot is an agentd slot on w's database with the drills' lease
// timings, allowed to reach the downstream at url.
func agentdSlot(w *world, name, url string) *daemon {
	return &daemon{name: name, bin: w.agentd, log: filepath.Join(w.dir, name+".log"),
		args: []string{"--lease", lease.String(), "--heartbeat", "1s", "--grace", "500ms", "--poll-interval", "200ms",
			"--concurrency", "8", "--listen", "", "--http-allowed-hosts", url},
		env: []string{"DATABASE_URL=" + w.url, "AGENTLEDGER_STATE_DIR=" + filepath.Join(w.dir, "state-"+name)},
	}
}

// taskState is task id's state.
func taskState(t *testing.T, w *world, id int64) string {
	var st string
	must(t, w.db.QueryRow(context.Background(), `SELECT state FROM tasks WHERE id = $1`, id).Scan(&st))
	return st
}

// rowCount counts table's rows.
func rowCount(t *testing.T, w *world, table string) int {
	var n int
	must(t, w.db.QueryRow(context.Background(), `SELECT count(*) FROM `+table).Scan(&n))
	return n
}
