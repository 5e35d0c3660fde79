package tui

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/operator"
	"github.com/agentledger/agentledger/waits"
)

// Waiting implements Store.
func (s *DBStore) Waiting(ctx context.Context, after *waits.Position, limit int) ([]Wait, int64, error) {
	var n int64
	// The partial index on waiting waits, and a task's key each: a wait
	// whose task ended waits for nothing (waits.List).
	if err := s.db.QueryRow(ctx, `/* tui.waiting */ SELECT count(*) FROM waits WHERE state = 'waiting' AND NOT `+waits.TaskEnded).Scan(&n); err != nil {
		return nil, 0, fmt.Errorf("counting waiting waits: %w", err)
	}
	if limit == 0 || n == 0 {
		return nil, n, nil
	}
	ws, err := s.Waits.List(ctx, waits.ListParams{Limit: limit, After: after})
	if err != nil {
		return nil, 0, err
	}
	out, err := s.withChildren(ctx, ws)
	return out, n, err
}

// Wait implements Store.
func (s *DBStore) Wait(ctx context.Context, id int64) (Wait, error) {
	w, err := s.Waits.Get(ctx, "", id)
	if err != nil {
		return Wait{}, err
	}
	out, err := s.withChildren(ctx, []waits.Wait{w})
	if err != nil {
		return Wait{}, err
	}
	return out[0], nil
}

// taskWaits are the waits of task id's generation g.
func (s *DBStore) taskWaits(ctx context.Context, id int64, g int32) ([]Wait, error) {
	ws, err := s.Waits.List(ctx, waits.ListParams{TaskID: id,
		States: []string{waits.Waiting, waits.Done, waits.TimedOut, waits.Ended, waits.Cancelled}, Limit: 1000})
	if err != nil {
		return nil, err
	}
	mine := ws[:0]
	for _, w := range ws {
		if w.Generation == g {
			mine = append(mine, w)
		}
	}
	return s.withChildren(ctx, mine)
}

// withChildren counts the children of ws's children waits.
func (s *DBStore) withChildren(ctx context.Context, ws []waits.Wait) ([]Wait, error) {
	counts, err := s.Waits.ChildCounts(ctx, ws)
	if err != nil {
		return nil, err
	}
	out := make([]Wait, len(ws))
	for i, w := range ws {
		out[i] = Wait{Wait: w, Children: counts[w.ID].Children, Ended: counts[w.ID].Ended}
	}
	return out, nil
}

// operator is who the console's signals and ends are by.
func (s *DBStore) operator() (string, error) {
	if s.User == "" {
		return "", errors.New("the console cannot tell who runs it (no user name): a signal or the end of a wait records who sent it")
	}
	return operator.Actor(s.User), nil
}

// consoleRetention is how long a signal the console sent is kept when no
// wait took it at once: it is for a wait that waits now, and must not
// linger for a wait to come (a re-run's, waiting anew for the same name
// and key), as a signal sent ahead of its wait does.
const consoleRetention = time.Second

// SendSignal implements Store. The signal's dedupe key is the wait's, so
// that a second send for it (a second operator) is the same signal,
// while a wait of a re-run, which waits anew for the same name and key,
// takes a signal of its own.
func (s *DBStore) SendSignal(ctx context.Context, id int64, payload json.RawMessage) (waits.Sent, error) {
	by, err := s.operator()
	if err != nil {
		return waits.Sent{}, err
	}
	w, err := s.Waits.Get(ctx, "", id)
	if err != nil {
		return waits.Sent{}, err
	}
	if w.Kind != waits.KindSignal {
		return waits.Sent{}, agentledger.Invalid("wait", "wait %d waits for %s, not for a signal", id, waitsFor(w))
	}
	if w.State != waits.Waiting {
		return waits.Sent{}, agentledger.Errorf(agentledger.CodeConflict, "%s; nothing was sent", endedAlready(w))
	}
	// A signal goes to the oldest wait for its name and key: sent for
	// this one while an older one waits, it would wake that task instead.
	if first, ok, err := s.Waits.Takes(ctx, w); err != nil {
		return waits.Sent{}, err
	} else if ok && first.ID != w.ID {
		return waits.Sent{}, agentledger.Errorf(agentledger.CodeConflict,
			"wait %d of task %d, older, waits for %s key %s too, and a signal goes to the oldest wait: it would wake task %d, not task %d; nothing was sent (signal wait %d first, or send twice with agentctl signal)",
			first.ID, first.TaskID, w.Signal, w.Key, first.TaskID, w.TaskID, first.ID)
	}
	return s.Waits.Send(ctx, waits.SignalParams{Tenant: w.Tenant, Name: w.Signal, Key: w.Key, Payload: payload,
		DedupeKey: consoleDedupeKey(id), SentBy: by, Retention: consoleRetention})
}

// consoleDedupeKey is the dedupe key of the signal the console sends for
// wait id.
func consoleDedupeKey(id int64) string { return fmt.Sprintf("console:wait:%d", id) }

// EndWait implements Store.
func (s *DBStore) EndWait(ctx context.Context, id int64, reason string) (waits.Wait, bool, error) {
	by, err := s.operator()
	if err != nil {
		return waits.Wait{}, false, err
	}
	return s.Waits.End(ctx, "", id, by, reason)
}
