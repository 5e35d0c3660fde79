package tui

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/approvals"
)

// ids are the ids of the tasks the table shows, in order.
func ids(a App) []int64 {
	out := make([]int64, len(a.tasks.shown))
	for i, t := range a.tasks.shown {
		out[i] = t.ID
	}
	return out
}

func span(from, to int64) []int64 {
	var out []int64
	for id := from; id >= to; id-- {
		out = append(out, id)
	}
	return out
}

func TestResizeKeepsTheFrame(t *testing.T) {
	t.Parallel()
	store := newFakeStore(40, epoch)
	d := newDriver(t, store, Options{}, 80, 24)
	checkFrame(t, d.view(), 80, 24)
	for _, size := range [][2]int{{100, 30}, {120, 40}, {60, 15}, {80, 24}} {
		d.send(tea.WindowSizeMsg{Width: size[0], Height: size[1]})
		checkFrame(t, d.view(), size[0], size[1])
		if got := d.app().tasks.table.Height(); got != size[1]-3-3-1 {
			t.Errorf("at %v the table shows %d rows", size, got)
		}
	}
	// The other views and a dialog keep the frame too.
	d.keys("enter")
	checkFrame(t, d.view(), 80, 24)
	d.keys("?")
	checkFrame(t, d.view(), 80, 24)
	d.keys("?", "R")
	if d.app().dialog == nil {
		t.Fatal("R opened no dialog")
	}
	d.send(tea.WindowSizeMsg{Width: 70, Height: 20})
	checkFrame(t, d.view(), 70, 20)
	d.keys("esc", "esc", "w")
	checkFrame(t, d.view(), 70, 20)
}

func TestNarrowTableDropsTenant(t *testing.T) {
	t.Parallel()
	d := newDriver(t, newFakeStore(3, epoch), Options{}, 120, 20)
	if !strings.Contains(d.view(), "TENANT") {
		t.Errorf("no TENANT column at 120 columns:\n%s", d.view())
	}
	d.send(tea.WindowSizeMsg{Width: 80, Height: 20})
	if strings.Contains(d.view(), "TENANT") {
		t.Errorf("TENANT column at 80 columns:\n%s", d.view())
	}
	if !strings.Contains(d.view(), "DETAIL") {
		t.Errorf("no DETAIL column at 80 columns:\n%s", d.view())
	}
}

func TestPagingByCursor(t *testing.T) {
	t.Parallel()
	store := newFakeStore(250, epoch)
	d := newDriver(t, store, Options{PageSize: 100}, 100, 30)
	if got := ids(d.app()); !slices.Equal(got, span(250, 151)) {
		t.Fatalf("first page: %v", got)
	}
	d.keys("n")
	if got := ids(d.app()); !slices.Equal(got, span(150, 51)) {
		t.Fatalf("second page: %v", got)
	}
	if !strings.Contains(d.view(), "page 2") {
		t.Errorf("the view does not say page 2:\n%s", d.view())
	}
	d.keys("n")
	if got := ids(d.app()); !slices.Equal(got, span(50, 1)) {
		t.Fatalf("third page: %v", got)
	}
	d.keys("n") // the last page: nothing follows
	if got := ids(d.app()); !slices.Equal(got, span(50, 1)) {
		t.Fatalf("past the last page: %v", got)
	}
	d.keys("p", "p")
	if got := ids(d.app()); !slices.Equal(got, span(250, 151)) {
		t.Fatalf("back to the first page: %v", got)
	}
	d.keys("p") // nothing before the first page
	var lists []string
	for _, c := range store.callLog() {
		if strings.HasPrefix(c, "list ") {
			lists = append(lists, c[strings.Index(c, "before="):])
		}
	}
	want := []string{"before=0 limit=100", "before=151 limit=100", "before=51 limit=100",
		"before=151 limit=100", "before=0 limit=100"}
	if !slices.Equal(lists, want) {
		t.Errorf("pages loaded:\n%v\nwant\n%v", lists, want)
	}
}

func TestLiveRefreshKeepsTheSelection(t *testing.T) {
	t.Parallel()
	store := newFakeStore(10, epoch)
	d := newDriver(t, store, Options{}, 100, 30)
	d.keys("down", "down")
	if got := d.app().tasks.selected().ID; got != 8 {
		t.Fatalf("selected %d, want 8", got)
	}
	store.mu.Lock()
	store.tasks = append(store.tasks, &agentledger.Task{ID: 11, Tenant: "acme", Queue: "default", Kind: "echo",
		State: agentledger.StateQueued, UpdatedAt: epoch})
	store.mu.Unlock()
	d.send(tickMsg{})
	if got := ids(d.app()); len(got) != 11 || got[0] != 11 {
		t.Fatalf("after a tick: %v", got)
	}
	if got := d.app().tasks.selected().ID; got != 8 {
		t.Errorf("after a tick the selection moved to %d, want 8", got)
	}
	if !strings.Contains(d.view(), "queued 1") {
		t.Errorf("the counts do not show the new task:\n%s", d.view())
	}
}

func TestFuzzySearchOverThePage(t *testing.T) {
	t.Parallel()
	d := newDriver(t, newFakeStore(20, epoch), Options{}, 100, 30)
	d.keys("/")
	d.typeText("dead")
	if got := ids(d.app()); !slices.Equal(got, []int64{20, 15, 10, 5}) {
		t.Fatalf("searching dead: %v", got)
	}
	if !strings.Contains(d.view(), "4 of 20 tasks") {
		t.Errorf("the view does not say how many match:\n%s", d.view())
	}
	// Every word must match a field.
	d.typeText(" 1")
	if got := ids(d.app()); !slices.Equal(got, []int64{15, 10}) {
		t.Fatalf("searching 'dead 1': %v", got)
	}
	// Digits are the start of an id, not letters anywhere.
	d.keys("esc", "/")
	d.typeText("2")
	if got := ids(d.app()); !slices.Equal(got, []int64{20, 2}) {
		t.Fatalf("searching '2': %v", got)
	}
	d.keys("esc", "/")
	d.typeText("dead")
	// q is typed into the search, not taken as quit.
	d.keys("q")
	if got := d.app().tasks.search.Value(); got != "deadq" {
		t.Errorf("search is %q", got)
	}
	d.keys("esc")
	if got := ids(d.app()); len(got) != 20 {
		t.Errorf("esc left %d rows", len(got))
	}
	// enter keeps the query and gives the keys back to the table.
	d.keys("/")
	d.typeText("need")
	d.keys("enter")
	if got := ids(d.app()); !slices.Equal(got, []int64{14, 7}) {
		t.Errorf("searching 'need': %v", got)
	}
	if d.app().tasks.inputFocused() {
		t.Error("the search still has the keys after enter")
	}
}

func TestSortAndStateFilter(t *testing.T) {
	t.Parallel()
	store := newFakeStore(10, epoch)
	d := newDriver(t, store, Options{}, 100, 30)
	d.keys("o") // by state
	got := d.app().tasks.shown
	for i := 1; i < len(got); i++ {
		if stateRank(got[i-1].State) > stateRank(got[i].State) {
			t.Fatalf("not sorted by state: %v then %v", got[i-1].State, got[i].State)
		}
	}
	d.keys("o") // by updated: task 1 changed last
	if got := ids(d.app()); got[0] != 1 {
		t.Errorf("sorted by updated: %v", got)
	}
	// A sort orders the page shown, and says so; the pages come newest first.
	if v := d.view(); !strings.Contains(v, "sort updated (this page)") {
		t.Errorf("the sort's scope is not said:\n%s", v)
	}
	d.keys("o") // back to id
	if got := ids(d.app()); got[0] != 10 {
		t.Errorf("sorted by id: %v", got)
	}
	if v := d.view(); strings.Contains(v, "(this page)") {
		t.Errorf("sorted by id, as loaded, yet:\n%s", v)
	}
	d.keys("ssssss") // queued, waiting, running, retrying, succeeded, dead: typed fast, read at once
	if f := d.app().tasks.filter; f.State != agentledger.StateDead {
		t.Fatalf("state filter %q", f.State)
	}
	if got := ids(d.app()); !slices.Equal(got, []int64{10, 5}) {
		t.Errorf("dead tasks: %v", got)
	}
	if !strings.Contains(d.view(), "[dead 2]") {
		t.Errorf("the counts do not mark the state filtered on:\n%s", d.view())
	}
}

func TestFilterForm(t *testing.T) {
	t.Parallel()
	store := newFakeStore(10, epoch)
	d := newDriver(t, store, Options{}, 100, 30)
	d.keys("f", "tab") // the queue
	d.typeText("billing")
	d.keys("tab", "tab")
	d.typeText("acme")
	d.keys("enter")
	f := d.app().tasks.filter
	if f != (Filter{Queue: "billing", Tenant: "acme"}) {
		t.Fatalf("filter %+v", f)
	}
	for _, id := range ids(d.app()) {
		if id%2 == 0 {
			t.Errorf("task %d of queue default listed", id)
		}
	}
	if !strings.Contains(d.view(), "queue=billing tenant=acme") {
		t.Errorf("the filter is not shown:\n%s", d.view())
	}
}

func TestUpdateDoesNoIO(t *testing.T) {
	t.Parallel()
	store := newFakeStore(10, epoch)
	d := newDriver(t, store, Options{}, 100, 30)
	before := len(store.callLog())
	var cmds []tea.Cmd
	for _, k := range []string{"n", "s", "o", "enter", "esc", "w", "esc", "r", "X"} {
		var cmd tea.Cmd
		d.m, cmd = d.m.Update(keyMsg(k))
		cmds = append(cmds, cmd)
	}
	d.m, _ = d.m.Update(tickMsg{})
	if got := store.callLog()[before:]; len(got) != 0 {
		t.Errorf("Update called the store: %v", got)
	}
	for _, c := range cmds {
		d.run(c)
	}
	if len(store.callLog()) == before {
		t.Error("the commands called nothing")
	}
}

func TestBulkCancelShowsTheCountFirst(t *testing.T) {
	t.Parallel()
	store := newFakeStore(20, epoch)
	store.tasks[0].State = agentledger.StateQueued
	store.tasks[2].State = agentledger.StateRunning
	d := newDriver(t, store, Options{}, 100, 30)
	d.keys("X")
	if d.app().dialog == nil {
		t.Fatalf("no dialog:\n%s", d.view())
	}
	// 2 queued/running + tasks 7 and 14 need attention.
	if v := d.view(); !strings.Contains(v, "Cancel all 4 unfinished tasks?") {
		t.Fatalf("the dialog does not give the count:\n%s", v)
	}
	d.keys("y")
	if got := store.callLog(); !slices.Contains(got, fmt.Sprintf("cancel-all %+v", Filter{})) {
		t.Errorf("calls: %v", got)
	}
	if v := d.view(); !strings.Contains(v, "cancelled 2 tasks") {
		t.Errorf("no status:\n%s", v)
	}
	// No dead task with the state filter on succeeded: nothing to confirm.
	d.keys("s", "s", "s", "s", "s", "T") // queued, waiting, running, retrying, succeeded
	if d.app().dialog != nil || !strings.Contains(d.view(), "no dead tasks match the filter state=succeeded") {
		t.Errorf("bulk retry over succeeded tasks:\n%s", d.view())
	}
}

// A replay's preview says which calls a person did not approve: the
// replay meets the same refusal there, as agentctl replay warns.
func TestReplayPreviewSaysACallWasNotApproved(t *testing.T) {
	t.Parallel()
	store := newFakeStore(5, epoch)
	task := store.tasks[4] // dead
	store.requests = append(store.requests, approvals.Request{ID: 3, TaskID: task.ID, Generation: task.Generation, Step: "tool/0",
		State: approvals.Denied, DecidedBy: "bob"})
	d := newDriver(t, store, Options{}, 140, 30)
	d.keys("r")
	if v := d.view(); !strings.Contains(v, "The call at tool/0 was not approved (request 3 denied by bob): it is refused") {
		t.Fatalf("the preview does not say the call is refused again:\n%s", v)
	}
}

// A search narrows the page shown, not what a bulk action selects: the
// dialog says so, over a list that shows fewer tasks than it acts on.
func TestBulkCancelSaysTheSearchIsNotItsScope(t *testing.T) {
	t.Parallel()
	store := newFakeStore(20, epoch)
	store.tasks[0].State = agentledger.StateQueued
	store.tasks[2].State = agentledger.StateRunning
	d := newDriver(t, store, Options{}, 120, 30)
	d.keys("/")
	d.typeText("echo")
	d.keys("enter", "X")
	if v := d.view(); !strings.Contains(v, "Cancel all 4 unfinished tasks?") || !strings.Contains(v, `The search "echo" narrows only the page shown`) {
		t.Fatalf("the dialog does not say the search is not its scope:\n%s", v)
	}
	d.keys("n", "esc", "X")
	if v := d.view(); strings.Contains(v, "narrows only the page shown") {
		t.Fatalf("without a search the dialog still speaks of one:\n%s", v)
	}
}

// A task waiting to be claimed says in the table what it waits for, where
// its last error would be.
func TestTaskListSaysWhatATaskWaitsFor(t *testing.T) {
	t.Parallel()
	store := newFakeStore(2, epoch)
	store.tasks[1].State = agentledger.StateQueued
	store.tasks[1].WaitReason = "waiting for a daemon with tool open_ticket"
	store.tasks[1].LastError = "an older error"
	v := newDriver(t, store, Options{}, 100, 20).view()
	if !strings.Contains(v, "queued") || !strings.Contains(v, "waiting for a daemon with tool open_ticket") || strings.Contains(v, "an older error") {
		t.Fatalf("the list does not say what task 2 waits for:\n%s", v)
	}
}

// The selected row is on the screen: after G and the next page (the
// page's first row), and after the window shrinks.
func TestTheSelectedRowStaysOnScreen(t *testing.T) {
	t.Parallel()
	store := newFakeStore(250, epoch)
	d := newDriver(t, store, Options{PageSize: 100}, 160, 40)
	onScreen := func(when string) {
		t.Helper()
		sel := d.app().tasks.selected()
		if sel == nil {
			t.Fatalf("%s: nothing selected", when)
		}
		id := strconv.FormatInt(sel.ID, 10)
		for _, l := range strings.Split(d.view(), "\n") {
			if f := strings.Fields(l); len(f) > 0 && f[0] == id {
				return
			}
		}
		t.Errorf("%s: task %s is selected but not on the screen:\n%s", when, id, d.view())
	}
	d.keys("G", "n")
	if got := d.app().tasks.selected().ID; got != 150 {
		t.Errorf("after G and n the selected task is %d, want 150, the page's first", got)
	}
	onScreen("after G and n")
	d.keys("G")
	onScreen("after G on page 2")
	d.send(tea.WindowSizeMsg{Width: 80, Height: 24})
	onScreen("after the window shrank")
}

// The page keys say why they do nothing rather than ignore the key: one
// page only, already on the first or the last page, the page still
// loading.
func TestPageKeysSayWhyTheyDoNothing(t *testing.T) {
	t.Parallel()
	status := func(t *testing.T, d *driver, key, want string) {
		t.Helper()
		d.keys(key)
		if got := d.app().status; got != want || d.app().statusErr {
			t.Errorf("after %s the status is %q (error %v), want %q", key, got, d.app().statusErr, want)
		}
		v := d.view()
		checkFrame(t, v, 80, 24)
		if !strings.Contains(v, want) {
			t.Errorf("after %s the screen does not say %q:\n%s", key, want, v)
		}
	}
	lists := func(store *fakeStore) []string {
		var out []string
		for _, c := range store.callLog() {
			if strings.HasPrefix(c, "list ") {
				out = append(out, c[strings.Index(c, "before="):])
			}
		}
		return out
	}

	t.Run("one page", func(t *testing.T) {
		store := newFakeStore(7, epoch)
		d := newDriver(t, store, Options{}, 80, 24)
		for _, k := range []string{"n", "]", "p", "["} {
			status(t, d, k, "one page only: 7 tasks")
		}
		d.keys("down") // the next key takes the status down
		if got := d.app().status; got != "" {
			t.Errorf("the status outlived the next key: %q", got)
		}
		if got := lists(store); len(got) != 1 {
			t.Errorf("pages loaded: %v, want the first only", got)
		}
	})
	t.Run("one page of a filter", func(t *testing.T) {
		d := newDriver(t, newFakeStore(40, epoch), Options{Filter: Filter{State: agentledger.StateDead}}, 80, 24)
		status(t, d, "n", "one page only: 8 tasks match the filter state=dead")
	})
	t.Run("first and last", func(t *testing.T) {
		d := newDriver(t, newFakeStore(250, epoch), Options{PageSize: 100}, 80, 24)
		status(t, d, "p", "already on the first page (n: next page)")
		d.keys("n", "n")
		status(t, d, "n", "already on the last page, page 3 (p: prev page)")
		if got := ids(d.app()); !slices.Equal(got, span(50, 1)) {
			t.Fatalf("past the last page: %v", got)
		}
	})
	t.Run("a full last page", func(t *testing.T) {
		// The page after a full one may be empty: the view stays on the
		// full one and says it is the last.
		store := newFakeStore(200, epoch)
		d := newDriver(t, store, Options{PageSize: 100}, 80, 24)
		d.keys("n", "down", "down")
		status(t, d, "n", "already on the last page, page 2 (p: prev page)")
		if got := ids(d.app()); !slices.Equal(got, span(100, 1)) {
			t.Fatalf("after n on the last page: %v", got)
		}
		if got := d.app().tasks.selected().ID; got != 98 {
			t.Errorf("after n on the last page task %d is selected, want 98 as before", got)
		}
		if v := d.view(); !strings.Contains(v, "page 2 · 100 tasks") || strings.Contains(v, "more: n") {
			t.Errorf("the info line does not say page 2 is the last:\n%s", v)
		}
		d.keys("p")
		if got := ids(d.app()); !slices.Equal(got, span(200, 101)) {
			t.Fatalf("back from the last page: %v", got)
		}
		want := []string{"before=0 limit=100", "before=101 limit=100", "before=1 limit=100", "before=0 limit=100"}
		if got := lists(store); !slices.Equal(got, want) {
			t.Errorf("pages loaded:\n%v\nwant\n%v", got, want)
		}

		one := newDriver(t, newFakeStore(100, epoch), Options{PageSize: 100}, 80, 24)
		status(t, one, "n", "one page only: 100 tasks")
		status(t, one, "n", "one page only: 100 tasks")
	})
	t.Run("loading", func(t *testing.T) {
		d := newDriver(t, newFakeStore(250, epoch), Options{PageSize: 100}, 80, 24)
		var load tea.Cmd
		d.m, load = d.m.Update(keyMsg("n")) // page 2 asked for, not yet in
		status(t, d, "n", "page 2 is still loading: n again once it is shown")
		d.run(load)
		if got := ids(d.app()); !slices.Equal(got, span(150, 51)) {
			t.Fatalf("page 2: %v", got)
		}
	})
}

// With six-digit counts the counts line says them to three figures at 80
// columns, so that every state, and the one filtered on, stays on it.
func TestCountsLineFitsLargeCounts(t *testing.T) {
	t.Parallel()
	m := tasksModel{env: &env{keys: DefaultKeyMap(), styles: DefaultStyles(), opts: Options{}.withDefaults()}, width: 80,
		counts: map[agentledger.TaskState]int64{agentledger.StateQueued: 28904, agentledger.StateWaiting: 5000, agentledger.StateRunning: 100,
			agentledger.StateSucceeded: 153021, agentledger.StateDead: 5000, agentledger.StateCancelled: 16992, agentledger.StateNeedsAttention: 4},
		filter: Filter{State: agentledger.StateNeedsAttention}}
	got := ansi.Strip(m.countsLine())
	if ansi.StringWidth(got) > 80 || !strings.Contains(got, "[attn 4]") || !strings.Contains(got, "ok 153k") || !strings.Contains(got, "cxl 16k") {
		t.Fatalf("counts line %q (%d cells)", got, ansi.StringWidth(got))
	}
	for n, want := range map[int64]string{952: "952", 9950: "9.9k", 208021: "208k", 1_234_567: "1.2M"} {
		if got := compactCount(n); got != want {
			t.Errorf("compactCount(%d) = %q, want %q", n, got, want)
		}
	}
}

// A re-run that would be refused for effects of unknown outcome is not
// offered: R says so at once, and how to go on (resolve them, or re-run
// anyway from agentctl); a task whose effects are all settled is asked.
func TestRerunRefusedForUnknownOutcomesSaysHowToGoOn(t *testing.T) {
	s := seedDB(t)
	d := newDriver(t, s, Options{}, 160, 30)
	d.keys("R") // task 4, the newest: a wire of unknown outcome
	if d.app().dialog != nil {
		t.Fatalf("a dialog offers the re-run the store would refuse:\n%s", d.view())
	}
	if v := d.view(); !strings.Contains(v, "task 4 has effects whose outcome is not known, at tool/0") ||
		!strings.Contains(v, "agentctl rerun 4 --despite-unknown") {
		t.Fatalf("the refusal does not say how to go on:\n%s", v)
	}
	d.keys("G", "R") // task 1, succeeded: nothing unsettled
	if d.app().dialog == nil || !strings.Contains(d.view(), "Re-run task 1 as a new intent?") {
		t.Fatalf("no dialog for a task with nothing unsettled:\n%s", d.view())
	}
}

// y and d on the page of a task that waits for no approval say so, as s
// and e say there is no wait, rather than do nothing.
func TestApproveKeysOnATaskWithoutARequestSaySo(t *testing.T) {
	t.Parallel()
	d := newDriver(t, newFakeStore(3, epoch), Options{}, 120, 30)
	d.keys("enter")
	for _, k := range []string{"y", "d"} {
		d.keys(k)
		if v := d.view(); !strings.Contains(v, "task 3 waits for no approval") || d.app().dialog != nil {
			t.Errorf("%s on a task without a request:\n%s", k, v)
		}
	}
}
