package tui

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/charmbracelet/x/exp/golden"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/registry"
)

// The form says what each field takes: the states, and the queues, kinds
// and tenants seen on the page or announced by the workers.
func TestFilterFormHints(t *testing.T) {
	t.Parallel()
	store := newFakeStore(4, epoch)
	store.workers = []registry.Worker{{ID: "w-1", LastHeartbeat: epoch, Queues: []string{"default", "mail"}, Kinds: []string{"steps", "agent"}}}
	d := newDriver(t, store, Options{}, 160, 30)
	d.keys("w", "esc", "f") // the workers view loads the workers
	wantStatus(t, d, "state: one of queued, waiting, running, retrying, succeeded, dead, cancelled, needs_attention, compensating or compensated; empty: any")
	d.keys("tab")
	wantStatus(t, d, "queue: seen billing, default, mail; empty: any")
	d.keys("tab")
	wantStatus(t, d, "kind: seen agent, steps; empty: any")
	d.keys("tab")
	wantStatus(t, d, "tenant: seen acme; empty: any")
	checkFrame(t, d.view(), 160, 30)
}

// A value no task can have is refused with what is valid, and changes
// nothing; the form stays open to correct it.
func TestFilterFormRefusesInvalidValues(t *testing.T) {
	t.Parallel()
	store := newFakeStore(10, epoch)
	d := newDriver(t, store, Options{}, 100, 30)
	lists := func() int {
		n := 0
		for _, c := range store.callLog() {
			if strings.HasPrefix(c, "list ") {
				n++
			}
		}
		return n
	}
	before := lists()
	d.keys("f")
	d.typeText("deed")
	d.keys("enter")
	// The status wraps at this width: check its text.
	if got, want := fmt.Sprint(d.app().tasks.form.err), `unknown state "deed": use queued, waiting, running, retrying, succeeded, dead, cancelled, needs_attention, compensating or compensated`; got != want {
		t.Fatalf("status %q, want %q", got, want)
	}
	checkFrame(t, d.view(), 100, 30)
	if a := d.app(); !a.tasks.filtering || a.tasks.filter != (Filter{}) || lists() != before {
		t.Fatalf("a refused form changed something: filtering %v, filter %+v, %d loads", a.tasks.filtering, a.tasks.filter, lists()-before)
	}
	backspace := func(n int) {
		for range n {
			d.send(keyMsg("backspace"))
		}
	}
	backspace(len("deed"))
	d.keys("tab")
	d.typeText("bill ing")
	d.keys("enter")
	wantStatus(t, d, `queue "bill ing" cannot exist: names are 1-128 letters, digits, '.', '_', ':' or '-'`)
	if d.app().tasks.filter != (Filter{}) {
		t.Fatalf("filter %+v", d.app().tasks.filter)
	}
	// A long value's error wraps rather than losing the valid states.
	backspace(len("bill ing"))
	d.keys("tab", "tab", "tab")
	d.typeText("attention")
	d.keys("enter")
	wantStatus(t, d, `unknown state "attention": use queued, waiting, running, retrying, succeeded, dead,`)
	wantStatus(t, d, "\nneeds_attention, compensating or compensated")
	checkFrame(t, d.view(), 100, 30)
	backspace(len("attention"))
	d.keys("tab")
	// Corrected, it applies.
	d.typeText("billing")
	d.keys("tab", "tab", "tab") // back to the state
	d.typeText("dead")
	d.keys("enter")
	if f := d.app().tasks.filter; f != (Filter{State: agentledger.StateDead, Queue: "billing"}) {
		t.Fatalf("filter %+v", f)
	}
	if got := ids(d.app()); !slices.Equal(got, []int64{5}) {
		t.Errorf("dead billing tasks: %v", got)
	}
}

// F clears every filter and the search, and says so where the filter is
// shown.
func TestClearAllFilters(t *testing.T) {
	t.Parallel()
	d := newDriver(t, newFakeStore(10, epoch), Options{Filter: Filter{State: agentledger.StateDead, Queue: "nowhere"}}, 120, 30)
	wantStatus(t, d, "filter state=dead queue=nowhere (F clears)")
	wantStatus(t, d, "no tasks match (F clears the filters)")
	wantStatus(t, d, "F clear filters")
	d.keys("/")
	d.typeText("zzz")
	d.keys("enter", "F")
	if a := d.app(); a.tasks.filter != (Filter{}) || a.tasks.search.Value() != "" || len(ids(a)) != 10 {
		t.Fatalf("after F: filter %+v, search %q, %d tasks", a.tasks.filter, a.tasks.search.Value(), len(ids(a)))
	}
	wantStatus(t, d, "filter all tasks · sort id · page 1 · 10 tasks")
}

// The form refusing a state, on a terminal.
func TestConsoleFilterFormRefuses(t *testing.T) {
	tm := startConsole(t, seedDB(t))
	waitFor(t, tm, "page 1 · 4 tasks", noLiveWorkers, seededCounts)
	press(tm, "f")
	waitFor(t, tm, "state: one of queued")
	tm.Type("deed")
	press(tm, "enter")
	waitFor(t, tm, `unknown state "deed"`)
	golden.RequireEqual(t, []byte(finish(t, tm)))
}

// F on a terminal: the filter it started with goes.
func TestConsoleClearFilters(t *testing.T) {
	tm := startConsoleWith(t, seedDB(t), Options{Filter: Filter{Queue: "billing"}})
	waitFor(t, tm, "filter queue=billing (F clears) · sort id · page 1 · 2 tasks")
	press(tm, "F")
	waitFor(t, tm, "filter all tasks · sort id · page 1 · 4 tasks")
	finish(t, tm)
}

// A search without hits says the key that clears it: esc, while typing
// and after (F would be typed into the search); with a filter too, both.
func TestSearchWithoutHitsSaysEsc(t *testing.T) {
	t.Parallel()
	d := newDriver(t, newFakeStore(10, epoch), Options{}, 120, 30)
	d.keys("/")
	d.typeText("zzz")
	wantStatus(t, d, "no tasks match the search on this page (esc clears it)")
	d.keys("enter")
	wantStatus(t, d, "no tasks match the search on this page (esc clears it)")
	d.keys("esc")
	if a := d.app(); a.tasks.search.Value() != "" || len(ids(a)) != 10 {
		t.Fatalf("after esc: search %q, %d tasks", a.tasks.search.Value(), len(ids(a)))
	}
	d.keys("s", "s", "s", "s", "s", "s") // dead
	d.keys("/")
	d.typeText("zzz")
	d.keys("enter")
	wantStatus(t, d, "no tasks match on this page (esc clears the search, F the filters)")
}

// The search matches what the list shows: a waiting task's DETAIL cell
// is what it waits for.
func TestSearchMatchesWhatAWaitingTaskShows(t *testing.T) {
	t.Parallel()
	waiting := &agentledger.Task{ID: 322, State: agentledger.StateWaiting, Tenant: "acme", Queue: "default", Kind: "steps",
		WaitReason: "waiting for signal payment.settled key order-b"}
	other := &agentledger.Task{ID: 7, State: agentledger.StateSucceeded, Tenant: "acme", Queue: "default", Kind: "echo"}
	for _, q := range []string{"order-b", "signal payment"} {
		if got := searched([]*agentledger.Task{other, waiting}, q); len(got) != 1 || got[0].ID != 322 {
			t.Errorf("search %q: %v, want task 322 alone", q, got)
		}
	}
}

// At 80 columns every field of the form shows its name and placeholder
// whole ("tenant: a…" hid the last).
func TestFilterFormFitsItsFields(t *testing.T) {
	t.Parallel()
	d := newDriver(t, newFakeStore(2, epoch), Options{}, 80, 24)
	d.keys("f")
	if v := d.view(); !strings.Contains(v, "state: any") || !strings.Contains(v, "tenant: any") {
		t.Errorf("the filter form at 80 columns:\n%s", v)
	}
}
