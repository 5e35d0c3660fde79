package tui

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/waits"
)

// fakeWaits is a fake store of three tasks: 2 waits for signal
// payment.settled key order-7 (wait 1), 3 for a timer (wait 2), due
// first: listed first, as the store lists them.
func fakeWaits() *fakeStore {
	s := newFakeStore(3, epoch)
	s.tasks[1].State, s.tasks[2].State = agentledger.StateWaiting, agentledger.StateWaiting
	s.waits = []Wait{
		{Wait: waits.Wait{ID: 2, TaskID: 3, Generation: 1, Step: "tool/1", Tenant: "acme", Kind: waits.KindTimer,
			CreatedAt: epoch.Add(-time.Minute), Deadline: epoch.Add(10 * time.Minute), State: waits.Waiting}},
		{Wait: waits.Wait{ID: 1, TaskID: 2, Generation: 1, Step: "tool/0", Tenant: "acme", Kind: waits.KindSignal,
			Signal: "payment.settled", Key: "order-7", CreatedAt: epoch.Add(-5 * time.Minute), Deadline: epoch.Add(time.Hour), State: waits.Waiting}},
	}
	return s
}

// sent reports whether the store was sent a signal.
func sent(s *fakeStore) bool {
	return slices.ContainsFunc(s.callLog(), func(c string) bool { return strings.HasPrefix(c, "send-signal") })
}

// The title counts the waits in every view, and stops once none waits.
func TestTitleCountsWaits(t *testing.T) {
	t.Parallel()
	store := fakeWaits()
	d := newDriver(t, store, Options{}, 80, 24)
	if got := title(d); got != "agentledger › tasks · no live workers · 2 waits" {
		t.Errorf("title %q", got)
	}
	d.keys("W")
	if got := title(d); got != "agentledger › waits · no live workers · 2 waits" {
		t.Errorf("title %q", got)
	}
	store.mu.Lock()
	for i := range store.waits {
		store.waits[i].State = waits.Done
	}
	store.mu.Unlock()
	d.send(tickMsg{})
	if got, v := title(d), d.view(); got != "agentledger › waits · no live workers" || !strings.Contains(v, "no task waits") {
		t.Errorf("with nothing waiting, title %q:\n%s", got, v)
	}
}

// In the signal's dialog no key but y sends: enter, p's input and its
// enter included; y sends the payload shown, once.
func TestSignalSendsOnlyWithY(t *testing.T) {
	t.Parallel()
	store := fakeWaits()
	d := newDriver(t, store, Options{}, 80, 24)
	d.keys("W", "down", "s") // the timer is due first
	if v := d.view(); !strings.Contains(v, "Send wait 1 its signal?") || !strings.Contains(v, "payload: {}") {
		t.Fatalf("s opened no dialog:\n%s", d.view())
	}
	for _, k := range []string{"enter", "Y", " ", "tab", "e", "s", "d", "down", "1"} {
		d.keys(k)
		if d.app().dialog == nil || sent(store) {
			t.Fatalf("%q closed the dialog or sent: %v", k, store.callLog())
		}
	}
	d.keys("p")
	d.typeText(`{"amount":1}`)
	if v := d.view(); !strings.Contains(v, `payload: {"amount":1}`) {
		t.Fatalf("p did not open an empty payload (the default {} is its placeholder):\n%s", v)
	}
	for range len(`{"amount":1}`) {
		d.keys("backspace")
	}
	d.typeText(`{"amount": 1}`)
	d.keys("enter") // checks it, back to the preview
	if d.app().dialog == nil || sent(store) || !strings.Contains(d.view(), `payload: {"amount":1}`) {
		t.Fatalf("enter in the payload closed the dialog or sent:\n%s", d.view())
	}
	d.keys("y")
	if n := countPrefix(store.callLog(), "send-signal"); n != 1 || !called(store, `send-signal 1 payload={"amount":1}`) {
		t.Fatalf("y sent %d times: %v", n, store.callLog())
	}
	if v := d.view(); !strings.Contains(v, "signal payment.settled key order-7 sent (signal 1): wait 1 took it and task 2 is") {
		t.Errorf("after the send:\n%s", v)
	}
}

// A waiting task's page offers s and e for its wait; once the wait is
// done, s says so and opens nothing.
func TestTaskViewActsOnItsWait(t *testing.T) {
	t.Parallel()
	store := fakeWaits()
	d := newDriver(t, store, Options{}, 80, 24)
	d.keys("down", "enter") // task 2
	if v := d.view(); !strings.Contains(v, "Wakes             when its signal comes") || !strings.Contains(v, "s send signal • e end wait") {
		t.Fatalf("task 2's page:\n%s", v)
	}
	d.keys("s")
	if !strings.Contains(d.view(), "Send wait 1 its signal?") {
		t.Fatalf("s on the task's page:\n%s", d.view())
	}
	d.keys("y")
	if !called(store, "send-signal 1 payload={}") {
		t.Fatalf("y did not send: %v", store.callLog())
	}
	d.keys("s")
	if v := d.view(); d.app().dialog != nil || !strings.Contains(v, "task 2 waits for no signal, timer or child") ||
		!strings.Contains(v, "done by signal at 2026-01-02 03:04:05") {
		t.Errorf("s once the wait is done:\n%s", v)
	}
}

// A wait that ended after the list loaded says how, and no dialog opens.
func TestWaitEndedBeforeTheDialog(t *testing.T) {
	t.Parallel()
	store := fakeWaits()
	d := newDriver(t, store, Options{}, 80, 24)
	d.keys("W", "down")
	if _, _, err := store.end(1, waits.TimedOut, "timeout", "no signal by 2026-01-02 04:04:05 UTC", nil); err != nil {
		t.Fatal(err)
	}
	d.keys("s")
	if v := d.view(); d.app().dialog != nil || !strings.Contains(v, "wait 1 ended first — timed_out by timeout at 2026-01-02 03:04:05 UTC") {
		t.Errorf("s on a wait that timed out:\n%s", v)
	}
	d.keys("e")
	if d.app().dialog != nil || countPrefix(store.callLog(), "end-wait") != 0 {
		t.Errorf("e on a wait that timed out: %v", store.callLog())
	}
}

// e asks for a reason; enter without one ends nothing; esc cancels.
func TestEndWaitNeedsAReason(t *testing.T) {
	t.Parallel()
	store := fakeWaits()
	d := newDriver(t, store, Options{}, 80, 24)
	d.keys("W", "e")
	if v := d.view(); !strings.Contains(v, "End wait 2?") || !strings.Contains(v, "stops waiting for a timer; it is due at") {
		t.Fatalf("e opened no dialog:\n%s", v)
	}
	d.keys("enter")
	if !strings.Contains(d.view(), "a reason is required") || countPrefix(store.callLog(), "end-wait") != 0 {
		t.Fatalf("enter without a reason: %v\n%s", store.callLog(), d.view())
	}
	d.typeText("not needed")
	d.keys("esc")
	if d.app().dialog != nil || countPrefix(store.callLog(), "end-wait") != 0 {
		t.Fatalf("esc ended the wait: %v", store.callLog())
	}
	d.keys("e")
	d.typeText("not needed")
	d.keys("enter")
	if !called(store, `end-wait 2 reason="not needed"`) || !strings.Contains(d.view(), "wait 2 ended: task 3 is woken") {
		t.Errorf("the end: %v\n%s", store.callLog(), d.view())
	}
}

// enter opens a wait's page, esc goes back to the list, then to the
// tasks; the page offers the actions while the wait waits.
func TestWaitPage(t *testing.T) {
	t.Parallel()
	store := fakeWaits()
	d := newDriver(t, store, Options{}, 80, 24)
	d.keys("W", "down", "enter")
	v := d.view()
	checkFrame(t, v, 80, 24)
	for _, want := range []string{"agentledger › wait 1", "Wait 1  waiting  task 2  acme · generation 1 · step tool/0",
		"Signal          payment.settled", "Key             order-7", "then the call times out and fails",
		"s send signal • e end wait"} {
		if !strings.Contains(v, want) {
			t.Errorf("the wait's page lacks %q:\n%s", want, v)
		}
	}
	d.keys("esc")
	if d.app().view != viewWaits || d.app().waits.openID != 0 {
		t.Error("esc did not go back to the list")
	}
	d.keys("esc")
	if d.app().view != viewTasks {
		t.Error("esc did not go back to the tasks")
	}
}

// The list fits small screens: each line within the width, the cursor's
// row on screen.
func TestWaitsFitSmallScreens(t *testing.T) {
	t.Parallel()
	store := fakeWaits()
	for i := 3; i <= 30; i++ {
		store.waits = append(store.waits, Wait{Wait: waits.Wait{ID: int64(i), TaskID: 1, Step: "tool/0", Tenant: "acme",
			Kind: waits.KindSignal, Signal: "order.shipped", Key: strings.Repeat("k", i), CreatedAt: epoch,
			Deadline: epoch.Add(time.Duration(i) * time.Hour), State: waits.Waiting}})
	}
	for _, size := range [][2]int{{80, 24}, {60, 15}, {40, 10}, {160, 12}} {
		d := newDriver(t, store, Options{}, size[0], size[1])
		d.keys("W", "G")
		v := d.view()
		checkFrame(t, v, size[0], size[1])
		if !strings.Contains(v, "30 ") {
			t.Errorf("at %dx%d the cursor's row (wait 30) is off screen:\n%s", size[0], size[1], v)
		}
	}
}

// Waits that end elsewhere do not leave the ones left scrolled off: with
// the cursor at the bottom of a long list and all but two gone, both show.
func TestWaitsLeftAllShow(t *testing.T) {
	t.Parallel()
	store := newFakeStore(12, epoch)
	for i := range 12 {
		store.tasks[i].State = agentledger.StateWaiting
		store.waits = append(store.waits, Wait{Wait: waits.Wait{ID: int64(i + 1), TaskID: int64(i + 1), Generation: 1, Step: "tool/0",
			Tenant: "acme", Kind: waits.KindTimer, CreatedAt: epoch, Deadline: epoch.Add(time.Duration(i+1) * time.Minute), State: waits.Waiting}})
	}
	d := newDriver(t, store, Options{}, 80, 24)
	d.keys("W", "G")
	store.mu.Lock()
	for i := range store.waits[2:] {
		store.waits[2+i].State = waits.Done
	}
	store.mu.Unlock()
	d.send(tickMsg{})
	v := d.view()
	if !strings.Contains(v, "2 waits") {
		t.Fatalf("the view does not count 2 waits:\n%s", v)
	}
	for _, id := range []string{"1", "2"} {
		if !slices.ContainsFunc(strings.Split(v, "\n"), func(l string) bool {
			f := strings.Fields(l)
			return len(f) > 1 && f[0] == id && f[1] == id
		}) {
			t.Errorf("wait %s is not on the screen:\n%s", id, v)
		}
	}
}
