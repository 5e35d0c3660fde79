package schedule

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/admit"
)

// DB is what the scheduler needs of a database: a pool, a connection or a
// transaction (pgx's own types satisfy it).
type DB interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Begin(ctx context.Context) (pgx.Tx, error)
}

// Store manages the schedules of one database.
type Store struct {
	db DB

	// Now pins the database clock for tests; nil means the database's now().
	Now agentledger.Clock
}

// NewStore returns the schedules of db.
func NewStore(db DB) *Store { return &Store{db: db} }

// clock returns the pinned clock or the database's.
func (s *Store) clock(ctx context.Context) (time.Time, error) {
	if s.Now != nil {
		return s.Now(), nil
	}
	var t time.Time
	err := s.db.QueryRow(ctx, nowSQL, nil).Scan(&t)
	return t, err
}

// Add validates sc (see Schedule.Validate) and stores it, its first fire
// the first slot after now (none when it is added paused). Its task must
// pass the door (package admit) as the schedule's, as each slot's does
// when it fires: a schedule whose tasks would be refused is refused now.
// It returns agentledger.ErrInvalid naming the field, or ErrConflict when
// the name is taken.
func (s *Store) Add(ctx context.Context, sc Schedule) (Schedule, error) {
	if err := sc.Validate(); err != nil {
		return Schedule{}, err
	}
	if _, err := (&admit.Door{}).Admit(ctx, s.db, admit.Submission{Caller: admit.Schedule, Params: sc.params("")}); err != nil {
		return Schedule{}, err
	}
	c, err := sc.compile()
	if err != nil {
		return Schedule{}, err
	}
	now, err := s.clock(ctx)
	if err != nil {
		return Schedule{}, dbError(sc.Name, err)
	}
	var next *time.Time
	if !sc.Paused {
		next = slotPtr(c.next(now))
	}
	rows, err := s.db.Query(ctx, insertSQL, sc.Name, sc.Tenant, sc.Spec, sc.Timezone, sc.Queue, sc.Kind,
		string(sc.Payload), sc.Priority, sc.MaxAttempts, string(sc.Missed), !sc.Paused, next, &now)
	if err != nil {
		return Schedule{}, dbError(sc.Name, err)
	}
	out, err := pgx.CollectExactlyOneRow(rows, scanSchedule)
	if errors.Is(err, pgx.ErrNoRows) {
		return Schedule{}, agentledger.Errorf(agentledger.CodeConflict, "schedule %q exists (remove it first, or choose another name)", sc.Name)
	}
	if err != nil {
		return Schedule{}, dbError(sc.Name, err)
	}
	return out, nil
}

// List returns every schedule by name.
func (s *Store) List(ctx context.Context) ([]Schedule, error) {
	rows, err := s.db.Query(ctx, listSQL)
	if err != nil {
		return nil, dbError("", err)
	}
	out, err := pgx.CollectRows(rows, scanSchedule)
	if err != nil {
		return nil, dbError("", err)
	}
	return out, nil
}

// Get returns the schedule of that name, or ErrNotFound.
func (s *Store) Get(ctx context.Context, name string) (Schedule, error) {
	return s.one(ctx, name, getSQL, name)
}

// Pause stops a schedule: it fires nothing, and has no next fire, until
// resumed. Tasks it already enqueued are not touched. Pausing a paused
// schedule changes nothing. ErrNotFound when there is no such schedule.
func (s *Store) Pause(ctx context.Context, name string) (Schedule, error) {
	return s.one(ctx, name, pauseSQL, name, s.Now.Param())
}

// Resume restarts a paused schedule from now: its next fire is the first
// slot after now, so the slots that passed while it was paused are never
// fired (whatever its missed policy). Resuming a running schedule changes
// nothing. ErrNotFound when there is no such schedule.
func (s *Store) Resume(ctx context.Context, name string) (Schedule, error) {
	tx, err := s.db.Begin(ctx)
	if err != nil {
		return Schedule{}, dbError(name, err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // after Commit it is a no-op
	rows, err := tx.Query(ctx, lockSQL, name, s.Now.Param())
	if err != nil {
		return Schedule{}, dbError(name, err)
	}
	var now time.Time
	sc, err := pgx.CollectExactlyOneRow(rows, func(row pgx.CollectableRow) (Schedule, error) {
		var sc Schedule
		err := row.Scan(append(sc.fields(), &now)...)
		return sc, err
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return Schedule{}, agentledger.Errorf(agentledger.CodeNotFound, "schedule %q does not exist", name)
	}
	if err != nil {
		return Schedule{}, dbError(name, err)
	}
	if !sc.Paused {
		return sc, nil
	}
	c, err := sc.compile()
	if err != nil {
		return Schedule{}, fmt.Errorf("schedule %q: %w", name, err)
	}
	sc, err = oneRow(ctx, tx, name, resumeSQL, name, slotPtr(c.next(now)), now)
	if err != nil {
		return Schedule{}, err
	}
	if err := tx.Commit(ctx); err != nil {
		return Schedule{}, dbError(name, err)
	}
	return sc, nil
}

// Remove deletes a schedule. Tasks it already enqueued are not touched.
// ErrNotFound when there is no such schedule.
func (s *Store) Remove(ctx context.Context, name string) error {
	tag, err := s.db.Exec(ctx, deleteSQL, name)
	if err != nil {
		return dbError(name, err)
	}
	if tag.RowsAffected() == 0 {
		return agentledger.Errorf(agentledger.CodeNotFound, "schedule %q does not exist", name)
	}
	return nil
}

func (s *Store) one(ctx context.Context, name, sql string, args ...any) (Schedule, error) {
	return oneRow(ctx, s.db, name, sql, args...)
}

// oneRow runs sql, which returns the schedule name or no row.
func oneRow(ctx context.Context, db DB, name, sql string, args ...any) (Schedule, error) {
	rows, err := db.Query(ctx, sql, args...)
	if err != nil {
		return Schedule{}, dbError(name, err)
	}
	sc, err := pgx.CollectExactlyOneRow(rows, scanSchedule)
	if errors.Is(err, pgx.ErrNoRows) {
		return Schedule{}, agentledger.Errorf(agentledger.CodeNotFound, "schedule %q does not exist", name)
	}
	if err != nil {
		return Schedule{}, dbError(name, err)
	}
	return sc, nil
}

// dbError wraps a database error, saying what to do about a schema
// without the schedules table.
func dbError(name string, err error) error {
	what := "schedules"
	if name != "" {
		what = fmt.Sprintf("schedule %q", name)
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "42P01" {
		return fmt.Errorf("%s: the database is not migrated (run agentctl migrate up): %w", what, err)
	}
	return fmt.Errorf("%s: %w", what, err)
}

// slotPtr returns a pointer to t, or nil for the zero time (no slot).
func slotPtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// fields are the scan targets of columns, in order.
func (sc *Schedule) fields() []any {
	return []any{&sc.Name, &sc.Tenant, &sc.Spec, &sc.Timezone, &sc.Queue, &sc.Kind, &sc.Payload,
		&sc.Priority, &sc.MaxAttempts, (*string)(&sc.Missed), &sc.Paused, &sc.NextFireAt,
		&sc.LastFireAt, &sc.CreatedAt, &sc.UpdatedAt}
}

func scanSchedule(row pgx.CollectableRow) (Schedule, error) {
	var sc Schedule
	err := row.Scan(sc.fields()...)
	return sc, err
}
