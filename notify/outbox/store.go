package outbox

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/agentledger/agentledger"
)

// DB is what the outbox needs of a database: a pool, a connection or a
// transaction (pgx's own types satisfy it).
type DB interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// Store reads and writes the outbox.
type Store struct {
	db DB

	// Now pins the database clock for tests; nil means the database's now().
	Now agentledger.Clock
}

// NewStore returns the outbox of db.
func NewStore(db DB) *Store { return &Store{db: db} }

// clock is the pinned clock or the local one.
func (s *Store) clock() time.Time {
	if s.Now == nil {
		return time.Now()
	}
	return s.Now()
}

// Message is a notify tool call's post.
type Message struct {
	Tenant     string
	TaskID     int64
	Generation int32
	Attempt    int32 // the task's attempt that sent it
	StepPath   string
	Channel    string
	Text       string
}

// AddMessage writes m's event through db — the notify tool's ledger
// transaction, so that the event commits with the effect's record — and
// returns its id.
func AddMessage(ctx context.Context, db DB, m Message) (int64, error) {
	var id int64
	err := db.QueryRow(ctx, insertMessageSQL, m.Tenant, m.TaskID, m.Generation, m.Attempt, m.StepPath, m.Channel, m.Text).Scan(&id)
	if err != nil {
		return 0, fmt.Errorf("outbox: %w", err)
	}
	return id, nil
}

// Claim leases up to n due events to owner for lease.
func (s *Store) Claim(ctx context.Context, owner string, n int, lease time.Duration) ([]Claimed, error) {
	rows, err := s.db.Query(ctx, claimSQL, owner, n, lease, s.Now.Param())
	if err != nil {
		return nil, fmt.Errorf("outbox: claim: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Claimed, error) {
		var c Claimed
		err := row.Scan(append(eventFields(&c.Event), &c.Token, &c.LeaseExpiresAt)...)
		return c, err
	})
	if err != nil {
		return nil, fmt.Errorf("outbox: claim: %w", err)
	}
	return out, nil
}

// Delivered marks c delivered to channel ("": its own; see Handler).
// ErrLeaseLost: the claim was lost, and
// another dispatcher delivers the event again (harmlessly: its effects are
// in the ledger).
func (s *Store) Delivered(ctx context.Context, c Claimed, channel string) error {
	return s.fenced(ctx, "delivered", c, deliveredSQL, c.ID, c.Token, s.Now.Param(), channel)
}

// Retry hands c back, due at at; failed counts it as a failed delivery (a
// rate limit's wait is not one).
func (s *Store) Retry(ctx context.Context, c Claimed, at time.Time, failed bool, reason string) error {
	n := 0
	if failed {
		n = 1
	}
	return s.fenced(ctx, "retry", c, retrySQL, c.ID, c.Token, at, n, agentledger.SafeText(reason), s.Now.Param())
}

// Failed gives c up with reason.
func (s *Store) Failed(ctx context.Context, c Claimed, reason string) error {
	return s.fenced(ctx, "failed", c, failedSQL, c.ID, c.Token, agentledger.SafeText(reason), s.Now.Param())
}

func (s *Store) fenced(ctx context.Context, what string, c Claimed, sql string, args ...any) error {
	tag, err := s.db.Exec(ctx, sql, args...)
	if err != nil {
		return fmt.Errorf("outbox: event %d %s: %w", c.ID, what, err)
	}
	if tag.RowsAffected() == 0 {
		return agentledger.Errorf(agentledger.CodeLeaseLost, "event %d: its claim (token %d) was lost: another dispatcher holds it, or it expired", c.ID, c.Token)
	}
	return nil
}

// ForTask lists the events of a task, oldest first; a non-empty tenant
// must own it.
func (s *Store) ForTask(ctx context.Context, tenant string, taskID int64) ([]Event, error) {
	return s.events(ctx, taskEventsSQL, taskID, tenant)
}

// eventFields are the scan targets of eventColumns.
func eventFields(e *Event) []any {
	return []any{&e.ID, &e.Tenant, &e.TaskID, &e.Generation, &e.Attempt, &e.Event, &e.Rule, &e.StepPath,
		&e.Channel, &e.Payload, &e.State, &e.Failures, &e.LastError, &e.CreatedAt, &e.DeliveredAt}
}

// DeleteSettled deletes at most batch events that were delivered or given
// up longer than window ago, and returns how many went. Pending events are
// never deleted, nor a rule's events of a task not finished (EventsCTE
// reads them).
func (s *Store) DeleteSettled(ctx context.Context, window time.Duration, batch int) (int64, error) {
	if window <= 0 || batch <= 0 {
		return 0, fmt.Errorf("outbox: delete settled: window %v and batch %d must be positive", window, batch)
	}
	tag, err := s.db.Exec(ctx, deleteSettledSQL, window, batch)
	if err != nil {
		return 0, fmt.Errorf("outbox: delete settled: %w", err)
	}
	return tag.RowsAffected(), nil
}

// Backlog returns how many events wait to be delivered and how long the
// oldest due one has waited.
func (s *Store) Backlog(ctx context.Context) (pending int64, lag time.Duration, err error) {
	var secs float64
	if err := s.db.QueryRow(ctx, backlogSQL).Scan(&pending, &secs); err != nil {
		return 0, 0, fmt.Errorf("outbox: backlog: %w", err)
	}
	return pending, time.Duration(secs * float64(time.Second)), nil
}
