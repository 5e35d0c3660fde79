package tui

import (
	"context"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
)

// A status message tells of the last action only: the next key takes it
// down.
func TestStatusClearsOnNextKey(t *testing.T) {
	t.Parallel()
	d := newDriver(t, newFakeStore(12, epoch), Options{}, 100, 30)
	d.keys("t") // task 12 succeeded: refused
	wantStatus(t, d, "task 12 is succeeded: only a dead task can be retried")
	d.keys("down")
	if v := d.view(); strings.Contains(v, "task 12 is succeeded") {
		t.Errorf("the status outlived the next key:\n%s", v)
	}
	if a := d.app(); a.status != "" || a.statusErr {
		t.Errorf("status %q (error %v) after a key", a.status, a.statusErr)
	}
}

// An expiry clears its own message, never a newer one.
func TestStatusExpiresOnlyItsOwn(t *testing.T) {
	t.Parallel()
	d := newDriver(t, newFakeStore(12, epoch), Options{}, 100, 30)
	d.keys("t")
	first := d.app().statusSeq
	d.keys("down", "t") // task 11 succeeded too
	wantStatus(t, d, "task 11 is succeeded")
	d.send(statusExpiredMsg{seq: first})
	wantStatus(t, d, "task 11 is succeeded")
	d.send(statusExpiredMsg{seq: d.app().statusSeq})
	if v := d.view(); strings.Contains(v, "task 11 is succeeded") {
		t.Errorf("the expiry left the status:\n%s", v)
	}
}

// Putting up a status schedules its expiry after Options.StatusFor; a
// message that changes nothing in the status schedules none.
func TestStatusSchedulesItsExpiry(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a := New(ctx, newFakeStore(3, epoch), Options{Poll: -1, StatusFor: time.Millisecond, Now: func() time.Time { return epoch }})
	m, cmd := a.Update(actionMsg{text: "task 3 cancelled"})
	seq := m.(App).statusSeq
	if !slicesContain(runAll(cmd), statusExpiredMsg{seq: seq}) {
		t.Errorf("no expiry of status %d scheduled", seq)
	}
	if _, cmd := m.Update(tea.WindowSizeMsg{Width: 80, Height: 24}); slicesContain(runAll(cmd), statusExpiredMsg{seq: seq}) {
		t.Error("a resize scheduled another expiry")
	}
}

// runAll runs cmd and the commands of its batches, and returns their
// messages.
func runAll(cmd tea.Cmd) []tea.Msg {
	if cmd == nil {
		return nil
	}
	msg := cmd()
	if b, ok := msg.(tea.BatchMsg); ok {
		var out []tea.Msg
		for _, c := range b {
			out = append(out, runAll(c)...)
		}
		return out
	}
	return []tea.Msg{msg}
}

func slicesContain(msgs []tea.Msg, want tea.Msg) bool {
	for _, m := range msgs {
		if m == want {
			return true
		}
	}
	return false
}

// In a running console, an older message's expiry arriving after a newer
// message leaves the newer one up.
func TestConsoleStatusOlderExpiryKeepsNewer(t *testing.T) {
	tm := startConsoleWith(t, newFakeStore(12, epoch), Options{StatusFor: time.Hour})
	waitFor(t, tm, "page 1 · 12 tasks")
	press(tm, "t")
	waitFor(t, tm, "task 12 is succeeded")
	press(tm, "down", "t")
	waitFor(t, tm, "task 11 is succeeded")
	tm.Send(statusExpiredMsg{seq: 1}) // the first message's timer
	if v := finish(t, tm); !strings.Contains(v, "task 11 is succeeded") {
		t.Errorf("the older expiry cleared the newer message:\n%s", v)
	}
}

// Its own expiry clears the message.
func TestConsoleStatusExpires(t *testing.T) {
	tm := startConsoleWith(t, newFakeStore(12, epoch), Options{StatusFor: time.Hour})
	waitFor(t, tm, "page 1 · 12 tasks")
	press(tm, "t")
	waitFor(t, tm, "task 12 is succeeded")
	tm.Send(statusExpiredMsg{seq: 1})
	if v := finish(t, tm); strings.Contains(v, "task 12 is succeeded") {
		t.Errorf("the status outlived its expiry:\n%s", v)
	}
}
