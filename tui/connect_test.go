package tui

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/charmbracelet/x/exp/teatest"
)

// startConnecting runs the console in a teatest program, its store opened
// by open.
func startConnecting(t *testing.T, open func(context.Context) (Store, error)) *teatest.TestModel {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	opts := Options{Now: func() time.Time { return epoch }, Location: time.UTC, Poll: 200 * time.Millisecond}
	return teatest.NewTestModel(t, Connect(ctx, open, opts), teatest.WithInitialTermSize(100, 30))
}

// The console draws at once while its store opens, and the keys typed
// meanwhile apply, in order, once the first page is in.
func TestConsoleConnectingKeepsKeys(t *testing.T) {
	store := seedDB(t)
	opened := make(chan struct{})
	tm := startConnecting(t, func(ctx context.Context) (Store, error) {
		select {
		case <-opened:
			return store, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	})
	waitFor(t, tm, "agentledger › connecting to the database…")
	press(tm, "down", "enter") // task 3, typed before any task is shown
	waitFor(t, tm, "2 keys typed: they apply once the tasks are shown")
	close(opened)
	waitFor(t, tm, "Task 3  queued")
	finish(t, tm)
}

// A store that does not open ends the console with its error.
func TestConsoleConnectFails(t *testing.T) {
	refused := errors.New("connection refused")
	tm := startConnecting(t, func(context.Context) (Store, error) { return nil, refused })
	m := tm.FinalModel(t, teatest.WithFinalTimeout(15*time.Second))
	releaseSignalWatcher(t)
	if c, ok := m.(Connecting); !ok || !errors.Is(c.Err(), refused) {
		t.Errorf("final model %T %+v, want Connecting with %v", m, m, refused)
	}
}
