package waits

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/dbaway"
)

// DB is what the store needs of a database: a pool.
type DB interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Begin(ctx context.Context) (pgx.Tx, error)
}

// Kinds of wait.
const (
	KindSignal   = "signal"
	KindTimer    = "timer"
	KindChildren = "children"
)

// States of a wait.
const (
	Waiting   = "waiting"
	Done      = "done"      // the signal came, the timer fired, the children finished
	TimedOut  = "timed_out" // its deadline came first
	Ended     = "ended"     // an operator ended it
	Cancelled = "cancelled" // its task was cancelled
)

// Wait is one task's wait at one step.
type Wait struct {
	ID         int64           `json:"id"`
	TaskID     int64           `json:"task_id"`
	Generation int32           `json:"generation"`
	Step       string          `json:"step"`
	Tenant     string          `json:"tenant"`
	Kind       string          `json:"kind"`
	Signal     string          `json:"signal,omitempty"`
	Key        string          `json:"key,omitempty"`
	Spec       json.RawMessage `json:"spec,omitempty"`
	CreatedAt  time.Time       `json:"created_at"`
	Deadline   time.Time       `json:"deadline"`
	State      string          `json:"state"`
	Result     json.RawMessage `json:"result,omitempty"`
	SignalID   *int64          `json:"signal_id,omitempty"`
	EndedAt    *time.Time      `json:"ended_at,omitempty"`
	EndedBy    string          `json:"ended_by,omitempty"`
	EndReason  string          `json:"end_reason,omitempty"`
	// ReplacedAt is when a replay took the wait's step up anew, after the
	// wait ended without what it waited for: the wait is kept as it ended
	// (table waits_replaced), and another waits at its step.
	ReplacedAt *time.Time `json:"replaced_at,omitempty"`
}

// Store keeps waits and signals.
type Store struct{ db DB }

// NewStore returns the store over db.
func NewStore(db DB) *Store { return &Store{db: db} }

// waitColumnsOf are the columns scanWait reads, of table alias t ("" or
// "w."), the last one replaced (replaced_at, or NULL of table waits).
func waitColumnsOf(t, replaced string) string {
	return t + `id, ` + t + `task_id, ` + t + `generation, ` + t + `step, ` + t + `tenant, ` + t + `kind, coalesce(` + t + `signal, ''), ` +
		`coalesce(` + t + `key, ''), ` + t + `spec, ` + t + `created_at, ` + t + `deadline, ` + t + `state, ` + t + `result, ` +
		t + `signal_id, ` + t + `ended_at, coalesce(` + t + `ended_by, ''), coalesce(` + t + `end_reason, ''), ` + replaced
}

var (
	waitColumns = waitColumnsOf("", "NULL::timestamptz")
	// replacedColumns are waitColumns of table waits_replaced.
	replacedColumns = waitColumnsOf("", "replaced_at")
)

func scanWait(row pgx.Row) (Wait, error) {
	var w Wait
	err := row.Scan(&w.ID, &w.TaskID, &w.Generation, &w.Step, &w.Tenant, &w.Kind, &w.Signal, &w.Key, &w.Spec, &w.CreatedAt,
		&w.Deadline, &w.State, &w.Result, &w.SignalID, &w.EndedAt, &w.EndedBy, &w.EndReason, &w.ReplacedAt)
	return w, err
}

// ensureSQL records a wait unless its step's is recorded already, and
// returns the one recorded; its deadline is fixed by the first attempt to
// reach the step (a timer of 10m fires 10m after it was first reached).
// It looks first and inserts only when it found none, so that an attempt
// finding its wait takes no id (approvals' ensureSQL says why).
var ensureSQL = `/* waits.ensure */
WITH found AS (
	SELECT ` + waitColumns + ` FROM waits WHERE task_id = $1 AND generation = $2 AND step = $3
),
ins AS (
	INSERT INTO waits (task_id, generation, step, tenant, kind, signal, key, spec, deadline)
	SELECT $1, $2, $3, $4::text, $5::text, nullif($6::text, ''), nullif($7::text, ''), $8::jsonb,
		coalesce($9::timestamptz, now() + $10::bigint * interval '1 microsecond')
	WHERE NOT EXISTS (SELECT FROM found)
	ON CONFLICT (task_id, generation, step) DO NOTHING
	RETURNING ` + waitColumns + `
)
SELECT * FROM found
UNION ALL
SELECT * FROM ins`

// ensure records w (its deadline: until, or timeout after now) in tx.
func ensure(ctx context.Context, tx pgx.Tx, w Wait, until *time.Time, timeout time.Duration) (Wait, error) {
	spec := w.Spec
	if len(spec) == 0 {
		spec = json.RawMessage(`{}`)
	}
	got, err := scanWait(tx.QueryRow(ctx, ensureSQL, w.TaskID, w.Generation, w.Step, w.Tenant, w.Kind, w.Signal, w.Key, spec,
		until, timeout.Microseconds()))
	if err != nil {
		return Wait{}, fmt.Errorf("wait of task %d at %s: %w", w.TaskID, w.Step, err)
	}
	if got.Kind != w.Kind || got.Signal != w.Signal || got.Key != w.Key {
		return Wait{}, agentledger.Permanent(fmt.Errorf("task %d step %s waits already for %s; this call asks for %s: "+
			"a step's wait cannot change between attempts", w.TaskID, w.Step, describe(got), describe(w)))
	}
	return got, nil
}

// timeOutSQL ends a wait whose deadline came.
var timeOutSQL = `/* waits.time_out */
UPDATE waits SET state = 'timed_out', ended_at = now(), ended_by = 'timeout',
	end_reason = 'no ' || CASE kind WHEN 'signal' THEN 'signal' ELSE 'end of its children' END
		|| ' by ' || to_char(deadline AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS "UTC"')
WHERE id = $1 AND state = 'waiting' AND deadline <= now()
RETURNING ` + waitColumns

// Get returns wait id, a replaced one too; tenant, when set, must own its
// task.
func (s *Store) Get(ctx context.Context, tenant string, id int64) (Wait, error) {
	w, err := scanWait(s.db.QueryRow(ctx, `/* waits.get */ SELECT `+waitColumns+` FROM waits WHERE id = $1 AND ($2 = '' OR tenant = $2)
		UNION ALL SELECT `+replacedColumns+` FROM waits_replaced WHERE id = $1 AND ($2 = '' OR tenant = $2)`, id, tenant))
	if errors.Is(err, pgx.ErrNoRows) {
		return Wait{}, fmt.Errorf("wait %d: %w", id, agentledger.ErrNotFound)
	}
	return w, err
}

// ListParams filter List.
type ListParams struct {
	Tenant string // "": every tenant's
	TaskID int64  // 0: every task's
	Kind   string // "": every kind
	// States; empty lists the waiting ones.
	States []string
	Limit  int // default 100
	// After lists the waiting waits that sort after it (a page's last,
	// Wait.Position), for the next page; nil lists from the first. Only
	// with the waiting state alone.
	After *Position
}

// Position is where a waiting wait sorts in List: by its deadline, the
// soonest first, then the newest first.
type Position struct {
	Deadline  time.Time
	CreatedAt time.Time
	ID        int64
}

// Position is where w sorts among the waiting waits.
func (w Wait) Position() Position {
	return Position{Deadline: w.Deadline, CreatedAt: w.CreatedAt, ID: w.ID}
}

// List returns waits: the waiting ones soonest deadline first, others
// newest first, the replaced ones among them. A wait still open whose
// task ended (it failed or was compensated after the wait woke it, before
// its wait tool ran again) is not listed as waiting: nothing waits on it
// unless the task is retried, which takes the wait up again.
func (s *Store) List(ctx context.Context, p ListParams) ([]Wait, error) {
	if len(p.States) == 0 {
		p.States = []string{Waiting}
	}
	if p.Limit <= 0 {
		p.Limit = 100
	}
	ended := slices.ContainsFunc(p.States, func(s string) bool { return s != Waiting })
	if ended && p.After != nil {
		return nil, agentledger.Invalid("after", "pages follow the waiting waits only (states %v)", p.States)
	}
	const filter = `state = ANY ($1) AND ($2 = '' OR tenant = $2) AND ($3::bigint = 0 OR task_id = $3) AND ($4 = '' OR kind = $4)`
	args := []any{p.States, p.Tenant, p.TaskID, p.Kind, p.Limit}
	// A replaced wait never waits: the list of the waiting ones (the
	// console's, at every refresh) does not read them.
	q := `/* waits.list_ended */ SELECT * FROM (
			SELECT ` + waitColumns + ` FROM waits WHERE ` + filter + ` AND (state <> 'waiting' OR NOT ` + TaskEnded + `)
			UNION ALL
			SELECT ` + replacedColumns + ` FROM waits_replaced WHERE ` + filter + `
		) w
		ORDER BY CASE WHEN state = 'waiting' THEN deadline END, created_at DESC, id DESC LIMIT $5`
	if !ended {
		q = `/* waits.list */ SELECT ` + waitColumns + ` FROM waits
		WHERE ` + filter + ` AND (state <> 'waiting' OR NOT ` + TaskEnded + `)
		AND ($6::bigint IS NULL OR deadline > $7 OR (deadline = $7 AND (created_at, id) < ($8, $6)))
		ORDER BY CASE WHEN state = 'waiting' THEN deadline END, created_at DESC, id DESC LIMIT $5`
		var id *int64
		var deadline, created *time.Time
		if a := p.After; a != nil {
			id, deadline, created = &a.ID, &a.Deadline, &a.CreatedAt
		}
		args = append(args, id, deadline, created)
	}
	rows, err := s.db.Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("waits: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Wait, error) { return scanWait(r) })
	if err != nil {
		return nil, fmt.Errorf("waits: %w", err)
	}
	return out, nil
}

// TaskEnded is the condition, on a row of waits, that its task ended —
// succeeded, dead, cancelled or compensated — by its primary key.
const TaskEnded = `EXISTS (SELECT FROM tasks t WHERE t.id = waits.task_id AND t.state IN ('succeeded', 'dead', 'cancelled', 'compensated'))`

// endSQL ends a waiting wait for an operator, waking its task: the call
// then fails with the reason, as a timeout does.
// The wait's task is locked before the wait's row is written, in the
// order a cancel takes them (the task, then its waits): no deadlock
// between them, and the end reads the wait as the cancel left it.
var endSQL = `/* waits.end */
WITH task AS (
	SELECT t.id FROM tasks t WHERE t.id = (SELECT task_id FROM waits WHERE id = $1 AND ($2 = '' OR tenant = $2)) FOR UPDATE
),
d AS (
	UPDATE waits SET state = 'ended', ended_at = now(), ended_by = $3, end_reason = $4
	WHERE id = $1 AND state = 'waiting' AND ($2 = '' OR tenant = $2) AND EXISTS (SELECT FROM task)
	RETURNING ` + waitColumns + `
),
` + claims.WakeTasks + `
SELECT * FROM d WHERE (SELECT count(*) FROM notified) >= 0`

// End ends wait id for by (an operator) with reason, if it still waits,
// and wakes its task: the waiting call fails saying so. ended is false
// when the wait had ended already (w is then as that left it).
func (s *Store) End(ctx context.Context, tenant string, id int64, by, reason string) (w Wait, ended bool, err error) {
	if by == "" {
		return Wait{}, false, agentledger.Invalid("by", "ending a wait names who ends it")
	}
	if reason == "" || len(reason) > 2000 {
		return Wait{}, false, agentledger.Invalid("reason", "ending a wait takes a reason of 1 to 2000 bytes: the task's journal keeps it")
	}
	err = dbaway.OnConflict(ctx, func() error {
		w, err = scanWait(s.db.QueryRow(ctx, endSQL, id, tenant, by, reason))
		return err
	})
	switch {
	case err == nil:
		return w, true, nil
	case !errors.Is(err, pgx.ErrNoRows):
		return Wait{}, false, fmt.Errorf("ending wait %d: %w", id, err)
	}
	w, err = s.Get(ctx, tenant, id)
	return w, false, err
}

// Backlog is how many waits wait, by kind, and how many signals wait for
// a waiter (for metrics).
func (s *Store) Backlog(ctx context.Context) (waiting map[string]int64, pendingSignals int64, err error) {
	rows, err := s.db.Query(ctx, `/* waits.backlog */ SELECT kind, count(*) FROM waits WHERE state = 'waiting' AND NOT `+TaskEnded+` GROUP BY kind`)
	if err != nil {
		return nil, 0, fmt.Errorf("waits backlog: %w", err)
	}
	waiting = map[string]int64{KindSignal: 0, KindTimer: 0, KindChildren: 0}
	for rows.Next() {
		var k string
		var n int64
		if err := rows.Scan(&k, &n); err != nil {
			rows.Close()
			return nil, 0, err
		}
		waiting[k] = n
	}
	if err := rows.Err(); err != nil {
		return nil, 0, err
	}
	err = s.db.QueryRow(ctx, `/* waits.pending_signals */ SELECT count(*) FROM signals WHERE state = 'pending'`).Scan(&pendingSignals)
	return waiting, pendingSignals, err
}

// describe says what w waits for, in a phrase.
func describe(w Wait) string {
	switch w.Kind {
	case KindSignal:
		return fmt.Sprintf("signal %s key %s", w.Signal, w.Key)
	case KindTimer:
		return "a timer"
	}
	return "its children"
}

// Describe says what a waiting task waits for, for its wait reason and
// operators: "waiting for signal payment.settled key order-7 (wait 3)
// until 2026-12-05 12:00:00 UTC".
func Describe(w Wait) string {
	at := w.Deadline.UTC().Format("2006-01-02 15:04:05 UTC")
	if w.Kind == KindTimer {
		return fmt.Sprintf("waiting for a timer (wait %d) due %s", w.ID, at)
	}
	return fmt.Sprintf("waiting for %s (wait %d) until %s", describe(w), w.ID, at)
}
