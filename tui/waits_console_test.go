package tui

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/charmbracelet/x/exp/golden"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/waits"
)

// The waits view over a database with three tasks waiting (seedWaits):
// for a signal, a timer and children, at 80×24 and at a wide size.

func TestConsoleWaits(t *testing.T) {
	tm := startConsoleSized(t, seedWaits(t), Options{}, 80, 24)
	waitFor(t, tm, "· 3 waits", "page 1 · 9 tasks", noLiveWorkers)
	press(tm, "W")
	waitFor(t, tm, "3 waits, the soonest deadline first", "payment.settled key order-7")
	golden.RequireEqual(t, []byte(finish(t, tm)))
}

func TestConsoleWideWaits(t *testing.T) {
	tm := startConsoleSized(t, seedWaits(t), Options{}, 130, 20)
	waitFor(t, tm, "· 3 waits", "page 1 · 9 tasks", noLiveWorkers)
	press(tm, "W")
	waitFor(t, tm, "WAITS FOR", "1 of 2 ended")
	golden.RequireEqual(t, []byte(finish(t, tm)))
}

// enter opens a wait: a children wait's spec whole, its deadline and
// what that does.
func TestConsoleWaitPage(t *testing.T) {
	tm := startConsoleSized(t, seedWaits(t), Options{}, 80, 24)
	waitFor(t, tm, "· 3 waits", "page 1 · 9 tasks", noLiveWorkers)
	press(tm, "W")
	waitFor(t, tm, "3 waits, the soonest deadline first")
	press(tm, "G", "enter")
	waitFor(t, tm, "› wait 3", `"on_failure": "fail"`, "then the call times out and")
	golden.RequireEqual(t, []byte(finish(t, tm)))
}

// s on a timer says there is nothing to send, and opens nothing.
func TestConsoleSendToATimer(t *testing.T) {
	tm := startConsoleSized(t, seedWaits(t), Options{}, 80, 24)
	waitFor(t, tm, "· 3 waits", "page 1 · 9 tasks", noLiveWorkers)
	press(tm, "W")
	waitFor(t, tm, "3 waits, the soonest deadline first")
	press(tm, "s")
	waitFor(t, tm, "wait 2 waits for a timer, not for a signal: there is nothing to send (e ends it)")
	finish(t, tm)
}

// s on a signal wait shows its name and key and the payload, {} until
// p edits it; JSON that does not parse is refused, saying why; enter
// alone never sends.
func TestConsoleSendSignalRefusesBadJSON(t *testing.T) {
	s := seedWaits(t)
	tm := startConsoleSized(t, s, Options{}, 80, 24)
	waitFor(t, tm, "· 3 waits", "page 1 · 9 tasks", noLiveWorkers)
	press(tm, "W")
	waitFor(t, tm, "3 waits, the soonest deadline first")
	press(tm, "down", "s")
	waitFor(t, tm, "Send wait 1 its signal?", "signal: payment.settled", "key:    order-7", "payload: {}",
		"y send with this payload · p edit the payload · n/esc close")
	press(tm, "enter")
	waitFor(t, tm, "press y to send: it cannot be taken back")
	press(tm, "p")
	tm.Type(`{"amount": 1500,}`)
	press(tm, "enter")
	waitFor(t, tm, "the payload is not JSON: invalid character '}' looking for beginning of", "object key string (at byte 17); fix it, or esc")
	golden.RequireEqual(t, []byte(finish(t, tm)))
	if w, err := s.Waits.Get(context.Background(), "", 1); err != nil || w.State != waits.Waiting {
		t.Fatalf("wait 1 after a refused payload: %+v, %v", w, err)
	}
	assertNoSignal(t, s)
}

// assertNoSignal fails if a signal was sent.
func assertNoSignal(t *testing.T, s *waitSeed) {
	t.Helper()
	sigs, err := s.Waits.ListSignals(context.Background(), waits.ListSignalsParams{States: []string{"pending", "consumed", "expired"}})
	if err != nil || len(sigs) != 0 {
		t.Fatalf("signals sent: %+v, %v", sigs, err)
	}
}

// The payload, checked, comes back to the preview; y sends it as the
// console's user, the wait takes it, its task wakes, and the status says
// so.
func TestConsoleSendSignal(t *testing.T) {
	s := seedWaits(t)
	s.extend(t)
	tm := startConsoleSized(t, s, Options{}, 80, 24)
	waitFor(t, tm, "· 3 waits", "page 1 · 9 tasks", noLiveWorkers)
	press(tm, "W")
	waitFor(t, tm, "3 waits, the soonest deadline first")
	press(tm, "down", "s")
	waitFor(t, tm, "Send wait 1 its signal?")
	press(tm, "p")
	tm.Type(`{ "amount": 1500, "currency": "EUR" }`)
	press(tm, "enter")
	waitFor(t, tm, `payload: {"amount":1500,"currency":"EUR"}`)
	press(tm, "y")
	waitFor(t, tm, "signal payment.settled key order-7 sent (signal 1): wait 1 took it and task 5 is", "· 2 waits")
	finish(t, tm)

	ctx := context.Background()
	w, err := s.Waits.Get(ctx, "", 1)
	if err != nil {
		t.Fatal(err)
	}
	if w.State != waits.Done || w.SignalID == nil || *w.SignalID != 1 || string(w.Result) != `{"amount": 1500, "currency": "EUR"}` {
		t.Errorf("wait 1: %s, signal %v, result %s", w.State, w.SignalID, w.Result)
	}
	sigs, err := s.Waits.ListSignals(ctx, waits.ListSignalsParams{States: []string{"pending", "consumed", "expired"}})
	if err != nil || len(sigs) != 1 {
		t.Fatalf("signals: %+v, %v", sigs, err)
	}
	if sig := sigs[0]; sig.ID != 1 || sig.SentBy != "operator:alice" || sig.Tenant != "acme" || sig.DedupeKey != "console:wait:1" {
		t.Errorf("the signal: %d by %q, tenant %q, key %q", sig.ID, sig.SentBy, sig.Tenant, sig.DedupeKey)
	}
	task, err := s.Claims.Get(ctx, "", 5)
	if err != nil {
		t.Fatal(err)
	}
	if task.State != agentledger.StateQueued {
		t.Errorf("task 5 after its signal: %s", task.State)
	}
}

// n drops a payload given, and says that nothing was sent.
func TestConsoleSendSignalCancelled(t *testing.T) {
	s := seedWaits(t)
	tm := startConsoleSized(t, s, Options{}, 80, 24)
	waitFor(t, tm, "· 3 waits", "page 1 · 9 tasks", noLiveWorkers)
	press(tm, "W")
	waitFor(t, tm, "3 waits, the soonest deadline first")
	press(tm, "down", "s")
	waitFor(t, tm, "Send wait 1 its signal?")
	press(tm, "p") // the default {} is not kept before what is typed
	tm.Type(`x`)
	waitFor(t, tm, "payload: x")
	press(tm, "esc")
	waitFor(t, tm, "payload: {}", "y send with this payload")
	press(tm, "p")
	tm.Type(`[1]`)
	press(tm, "enter")
	waitFor(t, tm, "payload: [1]")
	press(tm, "n")
	waitFor(t, tm, "signal not sent: wait 1 still waits, and the payload you gave was not sent")
	finish(t, tm)
	assertNoSignal(t, s)
}

// A wait that ended while its dialog was open is not sent a signal: the
// status says how it ended.
func TestConsoleSendSignalEndedFirst(t *testing.T) {
	s := seedWaits(t)
	s.extend(t)
	tm := startConsoleSized(t, s, Options{}, 80, 24)
	waitFor(t, tm, "· 3 waits", "page 1 · 9 tasks", noLiveWorkers)
	press(tm, "W")
	waitFor(t, tm, "3 waits, the soonest deadline first")
	press(tm, "down", "s")
	waitFor(t, tm, "Send wait 1 its signal?")
	ctx := context.Background()
	if sent, err := s.Waits.Send(ctx, waits.SignalParams{Tenant: "acme", Name: "payment.settled", Key: "order-7",
		Payload: json.RawMessage(`{"amount":1500}`), SentBy: "webhook:stripe"}); err != nil || sent.Woke == nil {
		t.Fatalf("the webhook's signal: %+v, %v", sent, err)
	}
	s.pinEnds(t)
	press(tm, "y")
	waitFor(t, tm, "wait 1 ended first — done by signal at 2026-01-02 03:03:05 UTC; nothing was sent")
	finish(t, tm)
	sigs, err := s.Waits.ListSignals(ctx, waits.ListSignalsParams{States: []string{"pending", "consumed", "expired"}})
	if err != nil || len(sigs) != 1 || sigs[0].SentBy != "webhook:stripe" {
		t.Fatalf("signals: %+v, %v; want the webhook's alone", sigs, err)
	}
}

// e asks for a reason, required; the end records it as the console's
// user's, and wakes the task, whose call then fails with it.
func TestConsoleEndWait(t *testing.T) {
	const reason = "the warehouse restocked by hand"
	s := seedWaits(t)
	tm := startConsoleSized(t, s, Options{}, 80, 24)
	waitFor(t, tm, "· 3 waits", "page 1 · 9 tasks", noLiveWorkers)
	press(tm, "W")
	waitFor(t, tm, "3 waits, the soonest deadline first")
	press(tm, "G", "e")
	waitFor(t, tm, "End wait 3?", "stops waiting for its children", "reason:")
	press(tm, "enter")
	waitFor(t, tm, "a reason is required: the waiting call fails with it", "journal keeps it") // wrapped inside the box, not cut
	tm.Type(reason)
	waitFor(t, tm, reason)
	golden.RequireEqual(t, []byte(finish(t, tm)))
	if w, _ := s.Waits.Get(context.Background(), "", 3); w.State != waits.Waiting {
		t.Fatalf("an empty reason ended wait 3: %s", w.State)
	}
}

func TestConsoleWaitEnded(t *testing.T) {
	const reason = "the warehouse restocked by hand"
	s := seedWaits(t)
	tm := startConsoleSized(t, s, Options{}, 80, 24)
	waitFor(t, tm, "· 3 waits", "page 1 · 9 tasks", noLiveWorkers)
	press(tm, "W")
	waitFor(t, tm, "3 waits, the soonest deadline first")
	press(tm, "G", "e")
	waitFor(t, tm, "End wait 3?")
	tm.Type(reason)
	press(tm, "enter")
	waitFor(t, tm, "wait 3 ended: task 7 is woken, and its call at tool/2/call_1 fails with", "· 2 waits")
	finish(t, tm)
	ctx := context.Background()
	w, err := s.Waits.Get(ctx, "", 3)
	if err != nil {
		t.Fatal(err)
	}
	if w.State != waits.Ended || w.EndedBy != "operator:alice" || w.EndReason != reason {
		t.Errorf("wait 3: %s by %q: %q", w.State, w.EndedBy, w.EndReason)
	}
	if task, err := s.Claims.Get(ctx, "", 7); err != nil || task.State != agentledger.StateQueued {
		t.Errorf("task 7 after its wait ended: %v, %v", task, err)
	}
}

// The task view says when a waiting task wakes, and shows its wait:
// what it waits for, its deadline; s and e act on it from there.
func TestConsoleTaskWaitsForSignal(t *testing.T) {
	tm := startConsoleSized(t, seedWaits(t), Options{}, 80, 24)
	waitFor(t, tm, "· 3 waits", "page 1 · 9 tasks", noLiveWorkers)
	press(tm, "down", "down", "down", "down", "enter")
	waitFor(t, tm, "Task 5  waiting", "Wakes", "s send signal • e end wait")
	golden.RequireEqual(t, []byte(finish(t, tm)))
}

func TestConsoleWideTaskTimer(t *testing.T) {
	tm := startConsoleSized(t, seedWaits(t), Options{}, 120, 30)
	waitFor(t, tm, "· 3 waits", "page 1 · 9 tasks", noLiveWorkers)
	press(tm, "down", "down", "down", "enter")
	waitFor(t, tm, "Task 6  waiting", "Wakes             at 2026-01-02 03:14:05 (in 10m), when its timer fires")
	golden.RequireEqual(t, []byte(finish(t, tm)))
}

// From the task view, s sends the task's signal; its page then shows the
// wait done, by the signal, with its result.
func TestConsoleTaskSendSignal(t *testing.T) {
	s := seedWaits(t)
	s.extend(t)
	tm := startConsoleSized(t, s, Options{}, 100, 30)
	waitFor(t, tm, "· 3 waits", "page 1 · 9 tasks", noLiveWorkers)
	press(tm, "down", "down", "down", "down", "enter")
	waitFor(t, tm, "Task 5  waiting", "s send signal • e end wait")
	press(tm, "s")
	waitFor(t, tm, "Send wait 1 its signal?")
	press(tm, "y")
	waitFor(t, tm, "wait 1 took it and task 5 is woken", "Task 5  queued")
	s.pinEnds(t)
	waitFor(t, tm, "done by signal at 2026-01-02 03:03:05")
	v := strings.Join(strings.Fields(finish(t, tm)), " ")
	if !strings.Contains(v, "1 at step tool/0: signal payment.settled key order-7 done by signal at 2026-01-02 03:03:05 (1m ago) result {}") {
		t.Errorf("the task view lacks the wait done:\n%s", v)
	}
}
