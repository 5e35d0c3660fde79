package flow

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/agentledger/agentledger"
)

// DB is what the store and the limiter need from a connection;
// *pgxpool.Pool, *pgx.Conn and pgx.Tx have it.
type DB interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// Store keeps the limits in table flow_limits.
type Store struct{ db DB }

// NewStore returns the limits of db.
func NewStore(db DB) *Store { return &Store{db: db} }

// Put checks l and stores it as its target's limit, replacing any; it
// returns the limit stored. Invalid input is an agentledger.InvalidError
// and changes nothing.
func (s *Store) Put(ctx context.Context, l Limit) (Limit, error) {
	if err := l.Check(); err != nil {
		return Limit{}, err
	}
	err := s.db.QueryRow(ctx, putSQL, l.Target, l.Rate.N, int(l.Rate.Per/time.Second), l.Burst, l.Source).Scan(&l.UpdatedAt)
	if err != nil {
		return Limit{}, fmt.Errorf("limit of %s: %w", l.Target, err)
	}
	return l, nil
}

// PutDefault stores l, a limit of agentd's own (SourceDefault), unless its
// target has a limit already: an operator's or the configuration's limit
// is never replaced by a default. It reports whether l was stored.
func (s *Store) PutDefault(ctx context.Context, l Limit) (bool, error) {
	l.Source = SourceDefault
	if err := l.Check(); err != nil {
		return false, err
	}
	tag, err := s.db.Exec(ctx, putDefaultSQL, l.Target, l.Rate.N, int(l.Rate.Per/time.Second), l.Burst, l.Source)
	if err != nil {
		return false, fmt.Errorf("default limit of %s: %w", l.Target, err)
	}
	return tag.RowsAffected() == 1, nil
}

// Get returns target's own limit (not its kind's default), or an error
// matching agentledger.ErrNotFound.
func (s *Store) Get(ctx context.Context, target string) (Limit, error) {
	t, _, err := ParseTarget(target)
	if err != nil {
		return Limit{}, err
	}
	rows, err := s.db.Query(ctx, selectSQL+` WHERE target = $1`, t)
	if err != nil {
		return Limit{}, fmt.Errorf("limit of %s: %w", t, err)
	}
	l, err := pgx.CollectExactlyOneRow(rows, scanLimit)
	if errors.Is(err, pgx.ErrNoRows) {
		return Limit{}, fmt.Errorf("no limit for %s: %w", t, agentledger.ErrNotFound)
	}
	if err != nil {
		return Limit{}, fmt.Errorf("limit of %s: %w", t, err)
	}
	return l, nil
}

// List returns every limit by target.
func (s *Store) List(ctx context.Context) ([]Limit, error) {
	rows, err := s.db.Query(ctx, selectSQL+` ORDER BY target`)
	if err != nil {
		return nil, fmt.Errorf("listing the limits: %w", err)
	}
	ls, err := pgx.CollectRows(rows, scanLimit)
	if err != nil {
		return nil, fmt.Errorf("listing the limits: %w", err)
	}
	return ls, nil
}

// Delete removes target's limit; an unknown one is an error matching
// agentledger.ErrNotFound.
func (s *Store) Delete(ctx context.Context, target string) error {
	t, _, err := ParseTarget(target)
	if err != nil {
		return err
	}
	tag, err := s.db.Exec(ctx, deleteSQL, t)
	if err != nil {
		return fmt.Errorf("limit of %s: %w", t, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("no limit for %s: %w", t, agentledger.ErrNotFound)
	}
	return nil
}

func scanLimit(row pgx.CollectableRow) (Limit, error) {
	var l Limit
	var per int
	err := row.Scan(&l.Target, &l.Rate.N, &per, &l.Burst, &l.Source, &l.UpdatedAt)
	l.Rate.Per = time.Duration(per) * time.Second
	return l, err
}

// Channel is where a change of the limits is announced (the target as
// payload), in the transaction that makes it: daemons listening drop their
// cached limits at once instead of after CacheFor.
const Channel = "agentledger_limits"

// changed announces the rows of CTE cte (a target column) on Channel.
func changed(cte string) string {
	return ` CROSS JOIN LATERAL (SELECT pg_notify('` + Channel + `', ` + cte + `.target)) AS announced`
}

var putSQL = `/* flow.put */
WITH put AS (
	INSERT INTO flow_limits (target, rate_n, rate_per_seconds, burst, source) VALUES ($1, $2, $3, $4, $5)
	ON CONFLICT (target) DO UPDATE SET rate_n = EXCLUDED.rate_n, rate_per_seconds = EXCLUDED.rate_per_seconds,
		burst = EXCLUDED.burst, source = EXCLUDED.source, updated_at = now()
	RETURNING target, updated_at)
SELECT put.updated_at FROM put` + changed("put")

var putDefaultSQL = `/* flow.put_default */
WITH put AS (
	INSERT INTO flow_limits (target, rate_n, rate_per_seconds, burst, source) VALUES ($1, $2, $3, $4, $5)
	ON CONFLICT (target) DO NOTHING
	RETURNING target)
SELECT put.target FROM put` + changed("put")

const selectSQL = `/* flow.select */ SELECT target, rate_n, rate_per_seconds, burst, source, updated_at FROM flow_limits`

var deleteSQL = `/* flow.delete */
WITH gone AS (DELETE FROM flow_limits WHERE target = $1 RETURNING target)
SELECT gone.target FROM gone` + changed("gone")
