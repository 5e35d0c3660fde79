package tui

import (
	"bytes"
	"context"
	"os"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/exp/golden"
	"github.com/charmbracelet/x/exp/teatest"

	"github.com/agentledger/agentledger"
)

// The teatest tests drive the console against a real database in a
// 100×30 terminal and compare the final screen with a golden file under
// testdata/ (go test -run TestConsole -update rewrites them). They do not
// run in parallel: see releaseSignalWatcher.

// startConsole runs the console over store in a teatest program.
func startConsole(t *testing.T, store Store) *teatest.TestModel {
	t.Helper()
	return startConsoleWith(t, store, Options{})
}

// startConsoleWith is startConsole with opts, on the tests' clock unless
// opts has one.
func startConsoleWith(t *testing.T, store Store, opts Options) *teatest.TestModel {
	t.Helper()
	return startConsoleSized(t, store, opts, 100, 30)
}

// startConsoleSized is startConsoleWith in a width×height terminal.
func startConsoleSized(t *testing.T, store Store, opts Options, width, height int) *teatest.TestModel {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if opts.Now == nil {
		opts.Now = func() time.Time { return epoch }
	}
	opts.Location, opts.Poll = time.UTC, 200*time.Millisecond
	return teatest.NewTestModel(t, New(ctx, store, opts), teatest.WithInitialTermSize(width, height))
}

// noLiveWorkers is the title's note over a database without workers
// (seedDB's): a test whose final screen is golden waits for it, since the
// workers load alongside the first page.
const noLiveWorkers = "› tasks · no live workers"

// seededCounts is the counts line over seedDB's four tasks once their
// counts have come: they are read apart from the page, and a screen
// taken before them shows "[all 0]".
const seededCounts = "[all 4]"

// waitFor waits until the screen has shown every text.
func waitFor(t *testing.T, tm *teatest.TestModel, texts ...string) {
	t.Helper()
	teatest.WaitFor(t, tm.Output(), func(b []byte) bool {
		for _, s := range texts {
			if !bytes.Contains(b, []byte(s)) {
				return false
			}
		}
		return true
	}, teatest.WithDuration(15*time.Second), teatest.WithCheckInterval(20*time.Millisecond))
}

// press sends keys: named ones ("enter", "esc", "tab", "down") or runes.
func press(tm *teatest.TestModel, keys ...string) {
	for _, k := range keys {
		tm.Send(keyMsg(k))
	}
}

// finish quits the console and returns its last screen.
func finish(t *testing.T, tm *teatest.TestModel) string {
	t.Helper()
	if err := tm.Quit(); err != nil {
		t.Fatal(err)
	}
	m := tm.FinalModel(t, teatest.WithFinalTimeout(15*time.Second))
	releaseSignalWatcher(t)
	return m.View()
}

// releaseSignalWatcher ends the goroutine teatest.NewTestModel leaves
// waiting for a SIGINT (to kill the program), which would otherwise
// outlive the test and fail testdb.Main's goleak check. It sends the
// process that SIGINT once the program has ended and waits for the
// goroutine to go. Only one teatest program may exist at a time: with two,
// the second watcher would be left without a signal to end it.
func releaseSignalWatcher(t *testing.T) {
	t.Helper()
	if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		buf := make([]byte, 1<<20)
		if !strings.Contains(string(buf[:runtime.Stack(buf, true)]), "teatest.NewTestModel.func") {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("teatest's signal watcher is still running")
}

// openDeadBillingTask filters on queue billing and state dead, and opens
// the one task listed.
func openDeadBillingTask(t *testing.T, tm *teatest.TestModel) {
	t.Helper()
	waitFor(t, tm, "needs_attention", "page 1 · 4 tasks", noLiveWorkers)
	press(tm, "f", "tab") // the queue
	tm.Type("billing")
	press(tm, "enter")
	waitFor(t, tm, "filter queue=billing (F clears) · sort id · page 1 · 2 tasks")
	press(tm, "s", "s", "s", "s", "s", "s") // queued, waiting, running, retrying, succeeded, dead
	waitFor(t, tm, "filter state=dead queue=billing (F clears) · sort id · page 1 · 1 task")
	press(tm, "enter")
	waitFor(t, tm, "[Overview]", "Task 2  dead")
}

func TestConsoleReplayPreview(t *testing.T) {
	tm := startConsole(t, seedDB(t))
	openDeadBillingTask(t, tm)
	press(tm, "r")
	waitFor(t, tm, "Replay task 2?", "looked up, then run if absent")
	golden.RequireEqual(t, []byte(finish(t, tm)))
}

func TestConsoleReplayConfirmed(t *testing.T) {
	store := seedDB(t)
	tm := startConsole(t, store)
	openDeadBillingTask(t, tm)
	press(tm, "r")
	waitFor(t, tm, "Replay task 2?")
	press(tm, "y")
	waitFor(t, tm, "task 2 queued for replay (generation 1)", "Task 2  queued")
	press(tm, "tab", "tab", "enter")
	waitFor(t, tm, "[Journal (3)]", `"id": "ch_1"`)
	golden.RequireEqual(t, []byte(finish(t, tm)))

	task, err := store.Claims.Get(context.Background(), "", 2)
	if err != nil {
		t.Fatal(err)
	}
	if task.State != agentledger.StateQueued || task.Generation != 1 || task.Attempt != 0 {
		t.Errorf("after the replay: %s, generation %d, attempt %d", task.State, task.Generation, task.Attempt)
	}
}

var _ tea.Model = App{}
