package tui

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/waits"
)

// The DBStore's waits over seedWaits' database.

func TestDBStoreWaiting(t *testing.T) {
	t.Parallel()
	s := seedWaits(t)
	ctx := context.Background()
	ws, n, err := s.Waiting(ctx, nil, 2)
	if err != nil {
		t.Fatal(err)
	}
	// The soonest deadline first: the timer, the signal; the children's
	// is beyond the limit, but counted.
	if n != 3 || len(ws) != 2 || ws[0].ID != 2 || ws[1].ID != 1 {
		t.Fatalf("waiting: %d in all, %+v", n, ws)
	}
	if _, n, err := s.Waiting(ctx, nil, 0); err != nil || n != 3 {
		t.Fatalf("the count alone: %d, %v", n, err)
	}
	d, err := s.Get(ctx, 5)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Waits) != 1 || d.Waits[0].ID != 1 || d.Waits[0].Signal != "payment.settled" {
		t.Errorf("task 5's waits: %+v", d.Waits)
	}
}

// A children wait counts the children it waits for: every child of its
// task's generation, or those its spec lists.
func TestDBStoreWaitChildren(t *testing.T) {
	t.Parallel()
	s := seedWaits(t)
	ctx := context.Background()
	count := func(want, wantEnded int) {
		t.Helper()
		w, err := s.Wait(ctx, 3)
		if err != nil {
			t.Fatal(err)
		}
		if w.Children != want || w.Ended != wantEnded {
			t.Errorf("wait 3 counts %d of %d ended; want %d of %d", w.Ended, w.Children, wantEnded, want)
		}
	}
	count(2, 1)
	if _, err := s.DB.Exec(ctx, `UPDATE waits SET spec = '{"mode":"all","on_failure":"fail","tasks":[9]}' WHERE id = 3`); err != nil {
		t.Fatal(err)
	}
	count(1, 0)
	if _, err := s.Operator.Cancel(ctx, "", 9); err != nil {
		t.Fatal(err)
	}
	count(1, 1)
	if w, err := s.Wait(ctx, 1); err != nil || w.Children != 0 {
		t.Errorf("a signal wait counts children: %+v, %v", w, err)
	}
	// A wait a replay replaced counts its children as it did.
	if _, err := s.DB.Exec(ctx, `WITH gone AS (DELETE FROM waits WHERE id = 3 RETURNING *)
		INSERT INTO waits_replaced (id, task_id, generation, step, tenant, kind, signal, key, spec, created_at, deadline, state, ended_at, ended_by)
		SELECT id, task_id, generation, step, tenant, kind, signal, key, spec, created_at, deadline, 'ended', now(), 'operator:alice' FROM gone`); err != nil {
		t.Fatal(err)
	}
	count(1, 1)
}

// The console sends a signal only to a signal wait that waits, and
// keeps one that no wait took for a second only.
func TestDBStoreSendSignal(t *testing.T) {
	t.Parallel()
	s := seedWaits(t)
	ctx := context.Background()
	var invalid *agentledger.InvalidError
	if _, err := s.SendSignal(ctx, 2, nil); !errors.As(err, &invalid) || invalid.Field != "wait" {
		t.Errorf("a signal to a timer: %v", err)
	}
	// Wait 1's deadline passed (seedWaits' instants are long past): it
	// still waits, but takes no signal; the signal expires unused.
	sent, err := s.SendSignal(ctx, 1, json.RawMessage(`{"amount":1}`))
	if err != nil {
		t.Fatal(err)
	}
	if sent.Woke != nil || sent.Duplicate || sent.Signal.ExpiresAt.Sub(sent.Signal.SentAt) != time.Second {
		t.Errorf("a signal for a wait past its deadline: woke %v, duplicate %v, kept %s",
			sent.Woke, sent.Duplicate, sent.Signal.ExpiresAt.Sub(sent.Signal.SentAt))
	}
	// Sent again for the same wait, it is the same signal.
	again, err := s.SendSignal(ctx, 1, json.RawMessage(`{"amount":1}`))
	if err != nil || !again.Duplicate || again.Signal.ID != sent.Signal.ID {
		t.Errorf("the same signal again: %+v, %v", again, err)
	}
	if _, err := s.SendSignal(ctx, 1, json.RawMessage(`{"amount":2}`)); !errors.Is(err, agentledger.ErrKeyReuse) {
		t.Errorf("another payload for the same wait: %v", err)
	}

	s.extend(t)
	if _, err := s.SendSignal(ctx, 3, nil); !errors.As(err, &invalid) {
		t.Errorf("a signal to a children wait: %v", err)
	}
	if _, _, err := s.EndWait(ctx, 3, "restocked by hand"); err != nil {
		t.Fatal(err)
	}
	// A wait that ended takes no signal, and none is sent.
	if _, err := s.SendSignal(ctx, 3, nil); err == nil {
		t.Error("a signal to an ended wait was sent")
	}
}

func TestDBStoreEndWait(t *testing.T) {
	t.Parallel()
	s := seedWaits(t)
	ctx := context.Background()
	s.User = ""
	if _, _, err := s.EndWait(ctx, 2, "no longer needed"); err == nil {
		t.Error("a nameless operator ended a wait")
	}
	if _, err := s.SendSignal(ctx, 1, nil); err == nil {
		t.Error("a nameless operator sent a signal")
	}
	s.User = "alice"
	if _, _, err := s.EndWait(ctx, 2, ""); err == nil {
		t.Error("a wait ended without a reason")
	}
	if w, _ := s.Waits.Get(ctx, "", 2); w.State != waits.Waiting {
		t.Fatalf("refused ends changed wait 2: %s", w.State)
	}
	w, ended, err := s.EndWait(ctx, 2, "no longer needed")
	if err != nil || !ended || w.State != waits.Ended || w.EndedBy != "operator:alice" {
		t.Fatalf("the end: %+v, %v, %v", w, ended, err)
	}
	w, ended, err = s.EndWait(ctx, 2, "again")
	if err != nil || ended || w.EndReason != "no longer needed" {
		t.Errorf("the end again: %+v, %v, %v", w, ended, err)
	}
}

// A signal goes to the oldest wait for its name and key: the console
// sends for a wait only when it is that one, and says which wait would
// take the signal otherwise, sending nothing.
func TestDBStoreSendSignalToTheOldestWaitOnly(t *testing.T) {
	t.Parallel()
	s := seedWaits(t)
	ctx := context.Background()
	var ids []int64
	for range 2 {
		r, err := s.Claims.Enqueue(ctx, claims.EnqueueParams{Tenant: "acme", Kind: "steps"})
		if err != nil {
			t.Fatal(err)
		}
		w, err := s.Waits.Await(ctx, waits.Wait{TaskID: r.Task.ID, Generation: 1, Step: "wait_for_signal/0", Tenant: "acme",
			Kind: waits.KindSignal, Signal: "ship.ok", Key: "o-5"}, nil, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, w.ID)
	}
	older, younger := ids[0], ids[1]
	_, err := s.SendSignal(ctx, younger, nil)
	if !errors.Is(err, agentledger.ErrConflict) || !strings.Contains(err.Error(), fmt.Sprintf("wait %d of task", older)) {
		t.Fatalf("a signal for the younger wait: %v, want a conflict naming wait %d", err, older)
	}
	var n int
	if err := s.DB.QueryRow(ctx, `SELECT count(*) FROM signals WHERE name = 'ship.ok'`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d signals sent (%v), want none", n, err)
	}
	if sent, err := s.SendSignal(ctx, older, nil); err != nil || sent.Woke == nil || sent.Woke.ID != older {
		t.Fatalf("a signal for the older wait: %+v, %v", sent, err)
	}
	// Now the younger is the oldest: its signal goes to it.
	if sent, err := s.SendSignal(ctx, younger, nil); err != nil || sent.Woke == nil || sent.Woke.ID != younger {
		t.Fatalf("then for the younger: %+v, %v", sent, err)
	}
}
