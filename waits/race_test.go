package waits_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/internal/test/atonce"
	"github.com/agentledger/agentledger/operator"
	"github.com/agentledger/agentledger/waits"
)

// A signal sent before its wait is kept and consumed when the wait comes;
// one sent after wakes the waiting task. Either way it is consumed once,
// and the wait's result is its payload.
func TestSignalBeforeAndAfterItsWait(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pool(t, 4)
	s := waits.NewStore(db)

	early := send(t, s, "payment.settled", "order-1", `{"amount":100}`)
	if early.Woke != nil || early.Signal.State != "pending" {
		t.Fatalf("a signal nobody waits for: %+v, want it kept pending", early)
	}
	first := newTask(t, db)
	w := await(t, s, signalWait(first, "tool/0", "payment.settled", "order-1"))
	if w.State != waits.Done || w.SignalID == nil || *w.SignalID != early.Signal.ID || string(w.Result) != `{"amount": 100}` {
		t.Fatalf("the wait after its signal: %+v, want done with signal %d", w, early.Signal.ID)
	}
	if st, by := signalState(t, db, early.Signal.ID); st != "consumed" || by != w.ID {
		t.Fatalf("the early signal is %s by wait %d, want consumed by %d", st, by, w.ID)
	}
	// The same call again (a retry of the step) finds its wait done and
	// consumes nothing more.
	if again := await(t, s, signalWait(first, "tool/0", "payment.settled", "order-1")); again.ID != w.ID || again.State != waits.Done {
		t.Fatalf("the wait again: %+v", again)
	}

	second := newTask(t, db)
	park(t, db, second.ID)
	w = await(t, s, signalWait(second, "tool/0", "payment.settled", "order-1"))
	if w.State != waits.Waiting {
		t.Fatalf("a wait with no signal: %s, want waiting", w.State)
	}
	late := send(t, s, "payment.settled", "order-1", `{"amount":200}`)
	if late.Woke == nil || late.Woke.ID != w.ID || late.Woke.State != waits.Done || late.Signal.State != "consumed" {
		t.Fatalf("a signal for a waiting wait: %+v, want it to end wait %d", late, w.ID)
	}
	var state string
	var due bool
	var reason *string
	if err := db.QueryRow(ctx, `SELECT state, run_at <= now(), wait_reason FROM tasks WHERE id = $1`, second.ID).Scan(&state, &due, &reason); err != nil {
		t.Fatal(err)
	}
	if state != string(agentledger.StateQueued) || !due || reason != nil {
		t.Fatalf("the waiting task after its signal: %s, due %v, wait reason %v; want queued now, waiting for nothing", state, due, reason)
	}
	if n := rows(t, db, "signals"); n != 2 {
		t.Fatalf("%d signals stored, want 2", n)
	}
}

// Signals and waits for one name and key, sent and recorded at once from
// many connections in random order, round after round: every signal is
// consumed by at most one wait and every wait consumes at most one signal;
// none is lost — when the dust settles no signal is pending while a wait
// for it still waits — and each wait's result is its own signal's payload.
func TestSignalRacingItsWait(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pool(t, 16)
	s := waits.NewStore(db)
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, seed>>1))

	const rounds = 100
	var consumed, kept, waiting int
	for round := range rounds {
		key := fmt.Sprintf("order-%d", round)
		nWaits, nSignals := 1+rng.IntN(6), 1+rng.IntN(6)
		tasks := make([]*agentledger.Task, nWaits)
		for i := range tasks {
			tasks[i] = newTask(t, db)
		}
		type op struct {
			yields int
			run    func() error
		}
		var ops []op
		for _, task := range tasks {
			ops = append(ops, op{rng.IntN(50), func() error {
				_, err := s.Await(ctx, signalWait(task, "tool/0", "payment.settled", key), nil, time.Hour)
				return err
			}})
		}
		for i := range nSignals {
			ops = append(ops, op{rng.IntN(50), func() error {
				_, err := s.Send(ctx, waits.SignalParams{Tenant: "acme", Name: "payment.settled", Key: key,
					Payload: json.RawMessage(fmt.Sprintf(`{"round": %d, "n": %d}`, round, i)), SentBy: "test"})
				return err
			}})
		}
		rng.Shuffle(len(ops), func(i, j int) { ops[i], ops[j] = ops[j], ops[i] })
		start := make(chan struct{})
		errs := make(chan error, len(ops))
		var wg sync.WaitGroup
		for _, o := range ops {
			wg.Go(func() {
				<-start
				for range o.yields {
					runtime.Gosched()
				}
				errs <- o.run()
			})
		}
		close(start)
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
		}
		c, k, w := checkMatched(t, db, tasks, key)
		if want := min(nWaits, nSignals); c != want || k != nSignals-want || w != nWaits-want {
			t.Fatalf("round %d (%d waits, %d signals): %d consumed, %d pending, %d waits waiting; want %d, %d, %d",
				round, nWaits, nSignals, c, k, w, want, nSignals-want, nWaits-want)
		}
		consumed, kept, waiting = consumed+c, kept+k, waiting+w
	}
	t.Logf("%d rounds: %d signals consumed, %d kept pending, %d waits left waiting", rounds, consumed, kept, waiting)
}

// checkMatched checks the signals for key and the waits of tasks pair one
// to one, and counts the signals consumed and pending and the waits still
// waiting.
func checkMatched(t *testing.T, db waits.DB, tasks []*agentledger.Task, key string) (consumed, pending, waiting int) {
	t.Helper()
	ctx := context.Background()
	ids := make([]int64, len(tasks))
	for i, task := range tasks {
		ids[i] = task.ID
	}
	// Each wait: waiting with nothing, or done with one signal whose
	// payload is its result and which names it back.
	r, err := db.Query(ctx, `SELECT w.id, w.state, coalesce(w.signal_id, 0), coalesce(w.result = s.payload, false),
		coalesce(s.state, ''), coalesce(s.wait_id, 0)
		FROM waits w LEFT JOIN signals s ON s.id = w.signal_id WHERE w.task_id = ANY ($1)`, ids)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	seen := map[int64]int64{} // signal → wait
	n := 0
	for r.Next() {
		var id, sig, back int64
		var state, sigState string
		var same bool
		if err := r.Scan(&id, &state, &sig, &same, &sigState, &back); err != nil {
			t.Fatal(err)
		}
		n++
		switch {
		case state == waits.Waiting && sig == 0:
			waiting++
		case state == waits.Done && same && sigState == "consumed" && back == id:
			if other, dup := seen[sig]; dup {
				t.Fatalf("signal %d was handed to waits %d and %d", sig, other, id)
			}
			seen[sig] = id
		default:
			t.Fatalf("wait %d is %s with signal %d (%s, consumed by wait %d, payload is its result: %v)", id, state, sig, sigState, back, same)
		}
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	if n != len(tasks) {
		t.Fatalf("%d waits recorded for %d calls", n, len(tasks))
	}
	// Each signal: pending and no one's, or consumed by the wait that
	// holds it.
	r, err = db.Query(ctx, `SELECT id, state, coalesce(wait_id, 0) FROM signals WHERE tenant = 'acme' AND name = 'payment.settled' AND key = $1`, key)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for r.Next() {
		var id, wait int64
		var state string
		if err := r.Scan(&id, &state, &wait); err != nil {
			t.Fatal(err)
		}
		switch {
		case state == "pending" && wait == 0:
			pending++
		case state == "consumed" && seen[id] == wait && wait != 0:
			consumed++
		default:
			t.Fatalf("signal %d is %s by wait %d; the waits hold it: %v", id, state, wait, seen[id])
		}
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	return consumed, pending, waiting
}

// A hundred senders of one signal at once, under one idempotency key: one
// records it, 99 are told it is a duplicate of that one, and it is
// consumed once. The key with another content is refused and changes
// nothing.
func TestConcurrentSendersOfOneSignal(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pool(t, 16)
	s := waits.NewStore(db)
	task := newTask(t, db)
	park(t, db, task.ID)
	w := await(t, s, signalWait(task, "tool/0", "payment.settled", "order-7"))

	const senders = 100
	sent := make([]waits.Sent, senders)
	errs := make([]error, senders)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range senders {
		wg.Go(func() {
			<-start
			sent[i], errs[i] = s.Send(ctx, waits.SignalParams{Tenant: "acme", Name: "payment.settled", Key: "order-7",
				Payload: json.RawMessage(`{"amount": 1500}`), DedupeKey: "psp-delivery-42", SentBy: fmt.Sprintf("webhook:%d", i)})
		})
	}
	close(start)
	wg.Wait()
	var recorded, duplicates, woke int
	for i := range senders {
		if errs[i] != nil {
			t.Fatalf("sender %d: %v", i, errs[i])
		}
		if sent[i].Signal.ID != sent[0].Signal.ID {
			t.Fatalf("sender %d was given signal %d, sender 0 signal %d", i, sent[i].Signal.ID, sent[0].Signal.ID)
		}
		if sent[i].Duplicate {
			duplicates++
		} else {
			recorded++
		}
		if sent[i].Woke != nil {
			woke++
			if sent[i].Duplicate || sent[i].Woke.ID != w.ID {
				t.Fatalf("sender %d woke wait %d (duplicate %v), want only the recording sender to wake wait %d", i, sent[i].Woke.ID, sent[i].Duplicate, w.ID)
			}
		}
	}
	if recorded != 1 || duplicates != senders-1 || woke != 1 {
		t.Fatalf("%d recorded, %d duplicates, %d woke a wait; want 1, %d, 1", recorded, duplicates, woke, senders-1)
	}
	if n := rows(t, db, "signals"); n != 1 {
		t.Fatalf("%d signals stored, want 1", n)
	}
	if st, by := signalState(t, db, sent[0].Signal.ID); st != "consumed" || by != w.ID {
		t.Fatalf("the signal is %s by wait %d, want consumed by wait %d", st, by, w.ID)
	}

	_, err := s.Send(ctx, waits.SignalParams{Tenant: "acme", Name: "payment.settled", Key: "order-7",
		Payload: json.RawMessage(`{"amount": 9999}`), DedupeKey: "psp-delivery-42", SentBy: "webhook"})
	if !errors.Is(err, agentledger.ErrKeyReuse) {
		t.Fatalf("the key with another payload: %v, want it refused as reused", err)
	}
	if n := rows(t, db, "signals"); n != 1 {
		t.Fatalf("%d signals stored after the refused one, want 1", n)
	}
}

// A hundred different signals at once for one waiter: one is consumed,
// by it; the 99 others are kept pending for waits to come.
func TestManySignalsForOneWaiter(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pool(t, 16)
	s := waits.NewStore(db)
	task := newTask(t, db)
	park(t, db, task.ID)
	w := await(t, s, signalWait(task, "tool/0", "inventory.arrived", "sku-9"))

	const senders = 100
	sent := make([]waits.Sent, senders)
	errs := make([]error, senders)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range senders {
		wg.Go(func() {
			<-start
			sent[i], errs[i] = s.Send(ctx, waits.SignalParams{Tenant: "acme", Name: "inventory.arrived", Key: "sku-9",
				Payload: json.RawMessage(fmt.Sprintf(`{"crate": %d}`, i)), SentBy: "test"})
		})
	}
	close(start)
	wg.Wait()
	woke := -1
	for i := range senders {
		if errs[i] != nil || sent[i].Duplicate {
			t.Fatalf("sender %d: %+v %v", i, sent[i], errs[i])
		}
		if sent[i].Woke != nil {
			if woke >= 0 {
				t.Fatalf("senders %d and %d both woke a wait", woke, i)
			}
			woke = i
		}
	}
	if woke < 0 {
		t.Fatal("no signal was consumed by the waiting wait")
	}
	got, err := s.Get(ctx, "acme", w.ID)
	if err != nil || got.State != waits.Done || *got.SignalID != sent[woke].Signal.ID || string(got.Result) != fmt.Sprintf(`{"crate": %d}`, woke) {
		t.Fatalf("the wait: %+v %v; want done with crate %d", got, err, woke)
	}
	pending, err := s.ListSignals(ctx, waits.ListSignalsParams{Tenant: "acme", Name: "inventory.arrived"})
	if err != nil || len(pending) != senders-1 {
		t.Fatalf("%d signals pending (%v), want %d", len(pending), err, senders-1)
	}
	for _, p := range pending {
		if p.ID == sent[woke].Signal.ID || p.WaitID != nil {
			t.Fatalf("pending signal %+v", p)
		}
	}
}

// Waits for one signal are served oldest first, and so are signals kept
// for them: the first wait gets the first signal.
func TestOldestWaiterFirst(t *testing.T) {
	t.Parallel()
	db := pool(t, 4)
	s := waits.NewStore(db)
	var ws []waits.Wait
	for range 3 {
		task := newTask(t, db)
		ws = append(ws, await(t, s, signalWait(task, "tool/0", "reply", "ticket-3")))
	}
	for i := range 3 {
		sent := send(t, s, "reply", "ticket-3", fmt.Sprintf(`{"n": %d}`, i))
		if sent.Woke == nil || sent.Woke.ID != ws[i].ID {
			t.Fatalf("signal %d woke %+v, want wait %d (the oldest still waiting)", i, sent.Woke, ws[i].ID)
		}
	}

	// Two signals before anyone waits; then two waits, one after the other.
	early := []waits.Sent{send(t, s, "reply", "ticket-4", `{"n": 0}`), send(t, s, "reply", "ticket-4", `{"n": 1}`)}
	for i := range 2 {
		w := await(t, s, signalWait(newTask(t, db), "tool/0", "reply", "ticket-4"))
		if w.State != waits.Done || *w.SignalID != early[i].Signal.ID {
			t.Fatalf("wait %d: %+v, want the signal sent %s", i, w, []string{"first", "second"}[i])
		}
	}
}

// A wait whose task moved on to a new generation (a re-run) is stale: a
// signal is not handed to it but kept for the new generation's wait.
func TestStaleGenerationDoesNotConsume(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pool(t, 4)
	s := waits.NewStore(db)
	task := newTask(t, db)
	stale := await(t, s, signalWait(task, "tool/0", "payment.settled", "order-9"))
	// The task ends while its wait still waits (an attempt cancelled
	// while it ran leaves it so), and an operator re-runs it.
	if _, err := db.Exec(ctx, `UPDATE tasks SET state = 'dead', last_error = 'gave up' WHERE id = $1`, task.ID); err != nil {
		t.Fatal(err)
	}
	rerun, err := operator.New(db).Rerun(ctx, "", task.ID)
	if err != nil || rerun.Generation != task.Generation+1 {
		t.Fatalf("re-run: %+v %v", rerun, err)
	}
	sent := send(t, s, "payment.settled", "order-9", `{"amount": 5}`)
	if sent.Woke != nil || sent.Signal.State != "pending" {
		t.Fatalf("a signal with only a stale wait: %+v, want it kept pending", sent)
	}
	if got, err := s.Get(ctx, "", stale.ID); err != nil || got.State != waits.Waiting || got.SignalID != nil {
		t.Fatalf("the stale wait: %+v %v, want it untouched", got, err)
	}
	fresh := await(t, s, signalWait(rerun, "tool/0", "payment.settled", "order-9"))
	if fresh.ID == stale.ID || fresh.State != waits.Done || *fresh.SignalID != sent.Signal.ID {
		t.Fatalf("the new generation's wait: %+v, want a new wait done with signal %d", fresh, sent.Signal.ID)
	}
}

// A signal past its expiry is not consumed; ExpireSignals marks it
// expired, once.
func TestExpiredSignalIsNotConsumed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pool(t, 4)
	s := waits.NewStore(db)
	old := send(t, s, "payment.settled", "order-3", `{"amount": 1}`)
	if _, err := db.Exec(ctx, `UPDATE signals SET expires_at = now() - interval '1 second' WHERE id = $1`, old.Signal.ID); err != nil {
		t.Fatal(err)
	}
	w := await(t, s, signalWait(newTask(t, db), "tool/0", "payment.settled", "order-3"))
	if w.State != waits.Waiting || w.SignalID != nil {
		t.Fatalf("a wait after an expired signal: %+v, want it waiting", w)
	}
	if st, _ := signalState(t, db, old.Signal.ID); st != "pending" {
		t.Fatalf("the expired signal is %s before the janitor", st)
	}
	// Readers see it expired already: no wait can consume it.
	for state, want := range map[string]int{"pending": 0, "expired": 1} {
		got, err := s.ListSignals(ctx, waits.ListSignalsParams{States: []string{state}})
		if err != nil || len(got) != want || (want == 1 && got[0].State != "expired") {
			t.Errorf("listing %s signals before the janitor: %+v, %v; want %d", state, got, err, want)
		}
	}
	n, err := s.ExpireSignals(ctx, 100)
	if err != nil || n != 1 {
		t.Fatalf("expire: %d %v, want 1", n, err)
	}
	if st, by := signalState(t, db, old.Signal.ID); st != "expired" || by != 0 {
		t.Fatalf("the signal is %s by wait %d, want expired", st, by)
	}
	if n, err := s.ExpireSignals(ctx, 100); err != nil || n != 0 {
		t.Fatalf("expire again: %d %v, want 0", n, err)
	}
	// A fresh one still comes through.
	if sent := send(t, s, "payment.settled", "order-3", `{"amount": 2}`); sent.Woke == nil || sent.Woke.ID != w.ID {
		t.Fatalf("a fresh signal: %+v, want it to end wait %d", sent, w.ID)
	}
}

// An operator ending a wait races its signal, round after round: exactly
// one wins. The signal is consumed only if the wait took it; otherwise
// it is kept, and the wait says who ended it.
func TestEndRacingSignal(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pool(t, 8)
	s := waits.NewStore(db)
	const rounds = 40
	var endWon, signalWon int
	for round := range rounds {
		key := fmt.Sprintf("order-%d", round)
		task := newTask(t, db)
		park(t, db, task.ID)
		w := await(t, s, signalWait(task, "tool/0", "payment.settled", key))
		var (
			ended  waits.Wait
			didEnd bool
			sent   waits.Sent
			endErr error
			sendEr error
		)
		start := make(chan struct{})
		var wg sync.WaitGroup
		wg.Go(func() {
			<-start
			ended, didEnd, endErr = s.End(ctx, "acme", w.ID, "operator:alice", "the customer paid by phone")
		})
		wg.Go(func() {
			<-start
			sent, sendEr = s.Send(ctx, waits.SignalParams{Tenant: "acme", Name: "payment.settled", Key: key,
				Payload: json.RawMessage(`{"amount": 10}`), SentBy: "test"})
		})
		close(start)
		wg.Wait()
		if endErr != nil || sendEr != nil {
			t.Fatalf("round %d: end %v, send %v", round, endErr, sendEr)
		}
		got, err := s.Get(ctx, "", w.ID)
		if err != nil {
			t.Fatal(err)
		}
		st, by := signalState(t, db, sent.Signal.ID)
		switch {
		case didEnd:
			endWon++
			if got.State != waits.Ended || got.EndedBy != "operator:alice" || got.SignalID != nil || sent.Woke != nil || st != "pending" || by != 0 {
				t.Fatalf("round %d, the end won: wait %+v, signal %s by %d, woke %+v", round, got, st, by, sent.Woke)
			}
		default:
			signalWon++
			if got.State != waits.Done || ended.State != waits.Done || got.SignalID == nil || *got.SignalID != sent.Signal.ID ||
				sent.Woke == nil || st != "consumed" || by != w.ID {
				t.Fatalf("round %d, the signal won: wait %+v (End saw %s), signal %s by %d", round, got, ended.State, st, by)
			}
		}
	}
	t.Logf("%d rounds: the end won %d, the signal %d", rounds, endWon, signalWon)
}

// An operator ending a wait, or a signal sent for it, racing the task's
// cancel never fails for a deadlock: the end takes the task first, as the
// cancel does, and a send broken by one is run again. Whichever commits
// first decides; nothing errs.
func TestEndAndSendRacingACancel(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pool(t, 8)
	s, op := waits.NewStore(db), operator.New(db)
	for round := range 20 {
		task := newTask(t, db)
		w := await(t, s, signalWait(task, "tool/0", "paid", fmt.Sprintf("o-%d", round)))
		park(t, db, task.ID)
		var raceErr, cancelErr error
		atonce.Run(func() {
			if round%2 == 0 {
				_, _, raceErr = s.End(ctx, "", w.ID, "alice", "no payment is coming")
			} else {
				_, raceErr = s.Send(ctx, waits.SignalParams{Tenant: "acme", Name: "paid", Key: w.Key, Payload: json.RawMessage(`{}`), SentBy: "test"})
			}
		}, func() {
			_, cancelErr = op.Cancel(ctx, "", task.ID)
		})
		if raceErr != nil || cancelErr != nil {
			t.Fatalf("round %d: end or send %v, cancel %v; want neither to err", round, raceErr, cancelErr)
		}
	}
}

// A signal sent while the oldest wait for it is being cancelled goes to
// the next one still waiting: the send, held by the cancel's lock on the
// oldest wait's task, reads that wait as the cancel left it and passes
// over it, rather than keeping the signal while a task waits for it.
func TestSignalPassesOverAWaitCancelledMeanwhile(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pool(t, 8)
	s := waits.NewStore(db)
	a, b := newTask(t, db), newTask(t, db)
	wa := await(t, s, signalWait(a, "tool/0", "paid", "o-1"))
	park(t, db, a.ID)
	wb := await(t, s, signalWait(b, "tool/0", "paid", "o-1"))
	park(t, db, b.ID)
	tx, err := db.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	// As a cancel does: the task, then its waits.
	if _, err := tx.Exec(ctx, `UPDATE tasks SET state = 'cancelled' WHERE id = $1`, a.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `UPDATE waits SET state = 'cancelled', ended_at = now() WHERE id = $1`, wa.ID); err != nil {
		t.Fatal(err)
	}
	type answer struct {
		sent waits.Sent
		err  error
	}
	done := make(chan answer, 1)
	go func() {
		sent, err := s.Send(ctx, waits.SignalParams{Tenant: "acme", Name: "paid", Key: "o-1", Payload: json.RawMessage(`{}`), SentBy: "test"})
		done <- answer{sent, err}
	}()
	// The send waits on the cancel's row lock before the cancel commits.
	deadline := time.Now().Add(10 * time.Second)
	for {
		var blocked bool
		if err := db.QueryRow(ctx, `SELECT EXISTS (SELECT FROM pg_stat_activity WHERE wait_event_type = 'Lock'
			AND query LIKE '%waits.send%' AND datname = current_database())`).Scan(&blocked); err != nil {
			t.Fatal(err)
		}
		if blocked {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the send never waited on the cancel's lock")
		}
		runtime.Gosched()
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	got := <-done
	if got.err != nil || got.sent.Woke == nil || got.sent.Woke.ID != wb.ID {
		t.Fatalf("signal %s woke %+v (%v); want B's wait %d, still waiting", got.sent.Signal.State, got.sent.Woke, got.err, wb.ID)
	}
}
