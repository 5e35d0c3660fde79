package tui

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/operator"
	"github.com/agentledger/agentledger/waits"
)

// Waiting implements Store.
func (s *DBStore) Waiting(ctx context.Context, limit int) ([]Wait, int64, error) {
	var n int64
	// The partial index on waiting waits, and a task's key each: a wait
	// whose task ended waits for nothing (waits.List).
	if err := s.db.QueryRow(ctx, `/* tui.waiting */ SELECT count(*) FROM waits WHERE state = 'waiting' AND NOT `+waits.TaskEnded).Scan(&n); err != nil {
		return nil, 0, fmt.Errorf("counting waiting waits: %w", err)
	}
	if limit == 0 || n == 0 {
		return nil, n, nil
	}
	ws, err := s.Waits.List(ctx, waits.ListParams{Limit: limit})
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

// childrenSQL counts the children each children wait of $1 waits for
// (those its spec lists, or every child of its task's generation), and
// how many of them ended, as waits.Store decides it; a wait a replay
// replaced (waits_replaced) too.
const childrenSQL = `/* tui.wait_children */
SELECT w.id, count(t.id), count(t.id) FILTER (WHERE t.state IN ('succeeded', 'dead', 'cancelled', 'compensated'))
FROM (
	SELECT id, task_id, generation, kind, spec FROM waits WHERE id = ANY ($1)
	UNION ALL
	SELECT id, task_id, generation, kind, spec FROM waits_replaced WHERE id = ANY ($1)
) w JOIN tasks t ON t.parent_id = w.task_id AND t.parent_generation = w.generation
	AND (jsonb_array_length(coalesce(w.spec -> 'tasks', '[]')) = 0
		OR t.id IN (SELECT jsonb_array_elements_text(w.spec -> 'tasks')::bigint))
WHERE w.kind = 'children'
GROUP BY w.id`

// withChildren counts the children of ws's children waits.
func (s *DBStore) withChildren(ctx context.Context, ws []waits.Wait) ([]Wait, error) {
	out := make([]Wait, len(ws))
	var ids []int64
	at := map[int64]int{}
	for i, w := range ws {
		out[i].Wait = w
		if w.Kind == waits.KindChildren {
			ids, at[w.ID] = append(ids, w.ID), i
		}
	}
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := s.db.Query(ctx, childrenSQL, ids)
	if err != nil {
		return nil, fmt.Errorf("counting the children of waits: %w", err)
	}
	var id, n, ended int64
	_, err = pgx.ForEachRow(rows, []any{&id, &n, &ended}, func() error {
		out[at[id]].Children, out[at[id]].Ended = int(n), int(ended)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("counting the children of waits: %w", err)
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
