package approvals

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
)

// DB is what the store needs of a database: a pool, a connection or a
// transaction.
type DB interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// States of a request.
const (
	Pending   = "pending"
	Approved  = "approved"
	Denied    = "denied"
	Expired   = "expired"   // timed out, meaning deny
	Withdrawn = "withdrawn" // its task was cancelled
)

// Request is one approval request: an effect waiting for a decision.
type Request struct {
	ID         int64           `json:"id"`
	TaskID     int64           `json:"task_id"`
	Generation int32           `json:"generation"`
	Step       string          `json:"step"`
	Tenant     string          `json:"tenant"`
	Tool       string          `json:"tool"`
	Class      string          `json:"class"`
	Target     string          `json:"target,omitempty"`
	Call       json.RawMessage `json:"call"`
	Reason     string          `json:"reason,omitempty"`
	Approvers  []string        `json:"approvers"`
	OnTimeout  string          `json:"on_timeout"`
	// Channel is the Slack channel its gate asks in; empty: the daemon's
	// approvals channel.
	Channel string `json:"channel,omitempty"`

	RequestedAt time.Time `json:"requested_at"`
	ExpiresAt   time.Time `json:"expires_at"`

	State          string     `json:"state"`
	DecidedAt      *time.Time `json:"decided_at,omitempty"`
	DecidedBy      string     `json:"decided_by,omitempty"`
	DecidedVia     string     `json:"decided_via,omitempty"`
	DecisionReason string     `json:"decision_reason,omitempty"`
}

// MayDecide reports whether a Slack user (or a member of one of groups)
// may decide r: anyone when it names no approvers.
func (r *Request) MayDecide(user string, groups []string) bool {
	if len(r.Approvers) == 0 || slices.Contains(r.Approvers, user) {
		return true
	}
	for _, g := range groups {
		if slices.Contains(r.Approvers, g) {
			return true
		}
	}
	return false
}

// Store keeps the requests in table approvals.
type Store struct{ db DB }

// NewStore returns the store over db.
func NewStore(db DB) *Store { return &Store{db: db} }

const columns = `id, task_id, generation, step, tenant, tool, class, coalesce(target, ''), request, coalesce(reason, ''),
	approvers, on_timeout, requested_at, expires_at, state, decided_at, coalesce(decided_by, ''),
	coalesce(decided_via, ''), coalesce(decision_reason, ''), coalesce(channel, '')`

func scan(row pgx.Row, more ...any) (Request, error) {
	var r Request
	err := row.Scan(append([]any{&r.ID, &r.TaskID, &r.Generation, &r.Step, &r.Tenant, &r.Tool, &r.Class, &r.Target, &r.Call, &r.Reason,
		&r.Approvers, &r.OnTimeout, &r.RequestedAt, &r.ExpiresAt, &r.State, &r.DecidedAt, &r.DecidedBy,
		&r.DecidedVia, &r.DecisionReason, &r.Channel}, more...)...)
	return r, err
}

// ensureSQL records a request unless its step's is recorded already, and
// returns the one recorded. It looks first and inserts only when it found
// none: an insert that met the recorded request took an id all the same,
// and a task asked once per attempt reaching the step made ids of 1, 3,
// 5. A concurrent insert of the same step (the
// same attempt cannot make two; a stale one racing a new one can) makes
// the statement return nothing: Ensure reads again.
var ensureSQL = `/* approvals.ensure */
WITH found AS (
	SELECT ` + columns + `, false FROM approvals WHERE task_id = $1 AND generation = $2 AND step = $3
),
ins AS (
	INSERT INTO approvals (task_id, generation, step, tenant, tool, class, target, request, reason, approvers, on_timeout, expires_at, channel)
	SELECT $1, $2, $3, $4::text, $5::text, $6::text, nullif($7::text, ''), $8::jsonb, nullif($9::text, ''), $10::text[], $11::text,
		now() + $12::bigint * interval '1 microsecond', nullif($13::text, '')
	WHERE NOT EXISTS (SELECT FROM found)
	ON CONFLICT (task_id, generation, step) DO NOTHING
	RETURNING ` + columns + `, true
)
SELECT * FROM found
UNION ALL
SELECT * FROM ins`

// Ensure records r (timeout: how long it waits) unless a request of its
// task, generation and step exists, and returns the one recorded, and
// whether this call recorded it: the first attempt to reach the step
// asks, every later one (a retry, a replay) finds the question and its
// answer.
func (s *Store) Ensure(ctx context.Context, r Request, timeout time.Duration) (Request, bool, error) {
	if r.Approvers == nil {
		r.Approvers = []string{}
	}
	for range 2 {
		var inserted bool
		got, err := scan(s.db.QueryRow(ctx, ensureSQL, r.TaskID, r.Generation, r.Step, r.Tenant, r.Tool, r.Class, r.Target,
			r.Call, r.Reason, r.Approvers, r.OnTimeout, timeout.Microseconds(), r.Channel), &inserted)
		if !errors.Is(err, pgx.ErrNoRows) {
			if err != nil {
				return Request{}, false, fmt.Errorf("approval request: %w", err)
			}
			return got, inserted, nil
		}
	}
	return Request{}, false, fmt.Errorf("approval request of task %d step %s: neither recorded nor found", r.TaskID, r.Step)
}

// Get returns request id; tenant, when set, must own its task
// (agentledger.ErrNotFound otherwise).
func (s *Store) Get(ctx context.Context, tenant string, id int64) (Request, error) {
	r, err := scan(s.db.QueryRow(ctx, `/* approvals.get */ SELECT `+columns+` FROM approvals WHERE id = $1 AND ($2 = '' OR tenant = $2)`, id, tenant))
	if errors.Is(err, pgx.ErrNoRows) {
		return Request{}, fmt.Errorf("approval request %d: %w", id, agentledger.ErrNotFound)
	}
	return r, err
}

// Find returns the request of a task's generation's step, if one was
// recorded.
func (s *Store) Find(ctx context.Context, taskID int64, generation int32, step string) (Request, bool, error) {
	r, err := scan(s.db.QueryRow(ctx, `/* approvals.find */ SELECT `+columns+` FROM approvals
		WHERE task_id = $1 AND generation = $2 AND step = $3`, taskID, generation, step))
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return Request{}, false, nil
	case err != nil:
		return Request{}, false, fmt.Errorf("approval request of task %d step %s: %w", taskID, step, err)
	}
	return r, true, nil
}

// ListParams filter List.
type ListParams struct {
	Tenant string // "": every tenant's
	TaskID int64  // 0: every task's
	// States; empty lists the pending ones.
	States []string
	Limit  int // default 100
	// After lists the pending requests that sort after it (a page's last,
	// Request.Position), for the next page; nil lists from the first.
	// Only with the pending state alone.
	After *Position
}

// Position is where a pending request sorts in List: the oldest first,
// then by id, the newest first.
type Position struct {
	RequestedAt time.Time
	ID          int64
}

// Position is where r sorts among the pending requests.
func (r Request) Position() Position { return Position{RequestedAt: r.RequestedAt, ID: r.ID} }

// List returns requests, oldest first for pending ones (the longest
// waiting at the top), newest first otherwise.
func (s *Store) List(ctx context.Context, p ListParams) ([]Request, error) {
	if len(p.States) == 0 {
		p.States = []string{Pending}
	}
	if p.Limit <= 0 {
		p.Limit = 100
	}
	var afterAt *time.Time
	var afterID *int64
	if a := p.After; a != nil {
		if slices.ContainsFunc(p.States, func(s string) bool { return s != Pending }) {
			return nil, agentledger.Invalid("after", "pages follow the pending requests only (states %v)", p.States)
		}
		afterAt, afterID = &a.RequestedAt, &a.ID
	}
	rows, err := s.db.Query(ctx, `/* approvals.list */ SELECT `+columns+` FROM approvals
		WHERE state = ANY ($1) AND ($2 = '' OR tenant = $2) AND ($3::bigint = 0 OR task_id = $3)
			AND ($6::bigint IS NULL OR requested_at > $5 OR (requested_at = $5 AND id < $6))
		ORDER BY CASE WHEN state = 'pending' THEN requested_at END, requested_at DESC, id DESC LIMIT $4`,
		p.States, p.Tenant, p.TaskID, p.Limit, afterAt, afterID)
	if err != nil {
		return nil, fmt.Errorf("approval requests: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Request, error) { return scan(r) })
	if err != nil {
		return nil, fmt.Errorf("approval requests: %w", err)
	}
	return out, nil
}

// Backlog is how many requests wait for a decision, and how long the
// oldest has (for metrics): one read of the pending index.
func (s *Store) Backlog(ctx context.Context) (n int64, oldest time.Duration, err error) {
	var secs float64
	err = s.db.QueryRow(ctx, `/* approvals.backlog */ SELECT count(*), coalesce(extract(epoch FROM now() - min(requested_at)), 0)::float8
		FROM approvals WHERE state = 'pending'`).Scan(&n, &secs)
	if err != nil {
		return 0, 0, fmt.Errorf("approval backlog: %w", err)
	}
	return n, time.Duration(secs * float64(time.Second)), nil
}
