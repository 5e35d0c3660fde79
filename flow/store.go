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
	err := s.db.QueryRow(ctx, putSQL, l.columns()...).Scan(&l.UpdatedAt)
	if err != nil {
		return Limit{}, fmt.Errorf("limit of %s: %w", l.Target, err)
	}
	return l, nil
}

// PutConfig stores l, a limit of a daemon's configuration (SourceConfig),
// unless its target's limit was set by an operator: a configuration seeds
// a limit and may change what it (or agentd's defaults) stored, but an
// operator's limit stands until the operator removes it. It returns the
// limit stored, or kept the operator's and returns it.
func (s *Store) PutConfig(ctx context.Context, l Limit) (got Limit, stored bool, err error) {
	l.Source = SourceConfig
	if err := l.Check(); err != nil {
		return Limit{}, false, err
	}
	err = s.db.QueryRow(ctx, putConfigSQL, l.columns()...).Scan(&l.UpdatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		kept, err := s.Get(ctx, l.Target)
		return kept, false, err
	}
	if err != nil {
		return Limit{}, false, fmt.Errorf("limit of %s: %w", l.Target, err)
	}
	return l, true, nil
}

// PutDefault stores l, a limit of agentd's own (SourceDefault), unless its
// target has a limit already: an operator's or the configuration's limit
// is never replaced by a default. It reports whether l was stored.
func (s *Store) PutDefault(ctx context.Context, l Limit) (bool, error) {
	l.Source = SourceDefault
	if err := l.Check(); err != nil {
		return false, err
	}
	tag, err := s.db.Exec(ctx, putDefaultSQL, l.columns()...)
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

// columns are l's values in the order of limitColumns, NULL for the
// parts not set.
func (l *Limit) columns() []any {
	var brk [3]*int64
	if b := l.Breaker; b != nil {
		f, w, c := int64(b.Failures), b.Window.Milliseconds(), b.Cooldown.Milliseconds()
		brk = [3]*int64{&f, &w, &c}
	}
	return []any{l.Target, rateN(l.Rate), ratePer(l.Rate), l.Burst, l.Source,
		nullInt(int64(l.Concurrency)), rateN(l.Tokens), ratePer(l.Tokens), brk[0], brk[1], brk[2]}
}

func rateN(r Rate) *int64 { return nullInt(r.N) }

func ratePer(r Rate) *int64 { return nullInt(int64(r.Per / time.Second)) }

func nullInt(v int64) *int64 {
	if v == 0 {
		return nil
	}
	return &v
}

func scanLimit(row pgx.CollectableRow) (Limit, error) {
	var l Limit
	var rateN, ratePer, conc, tokN, tokPer, bf, bw, bc *int64
	err := row.Scan(&l.Target, &rateN, &ratePer, &l.Burst, &l.Source, &conc, &tokN, &tokPer, &bf, &bw, &bc, &l.UpdatedAt)
	if rateN != nil && ratePer != nil {
		l.Rate = Rate{N: *rateN, Per: time.Duration(*ratePer) * time.Second}
	} else {
		l.Burst = 0
	}
	if tokN != nil && tokPer != nil {
		l.Tokens = Rate{N: *tokN, Per: time.Duration(*tokPer) * time.Second}
	}
	if conc != nil {
		l.Concurrency = int(*conc)
	}
	if bf != nil && bw != nil && bc != nil {
		l.Breaker = &Breaker{Failures: int(*bf), Window: time.Duration(*bw) * time.Millisecond, Cooldown: time.Duration(*bc) * time.Millisecond}
	}
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

// limitColumns are the columns a limit is stored in, $1..$11 in putSQL.
const limitColumns = `target, rate_n, rate_per_seconds, burst, source, concurrency, tokens_n, tokens_per_seconds,
	breaker_failures, breaker_window_ms, breaker_cooldown_ms`

var (
	putSQL = putLimitSQL("flow.put", "")
	// putConfigSQL leaves an operator's row as it is, and returns no row.
	putConfigSQL = putLimitSQL("flow.put_config", "\n\tWHERE flow_limits.source <> '"+SourceOperator+"'")
)

// putLimitSQL stores a limit, replacing its target's where the row meets
// where (empty: always), and returns when.
func putLimitSQL(name, where string) string {
	return `/* ` + name + ` */
WITH put AS (
	INSERT INTO flow_limits (` + limitColumns + `) VALUES ($1, $2, $3, greatest($4, 1), $5, $6, $7, $8, $9, $10, $11)
	ON CONFLICT (target) DO UPDATE SET rate_n = EXCLUDED.rate_n, rate_per_seconds = EXCLUDED.rate_per_seconds,
		burst = EXCLUDED.burst, source = EXCLUDED.source, concurrency = EXCLUDED.concurrency,
		tokens_n = EXCLUDED.tokens_n, tokens_per_seconds = EXCLUDED.tokens_per_seconds,
		breaker_failures = EXCLUDED.breaker_failures, breaker_window_ms = EXCLUDED.breaker_window_ms,
		breaker_cooldown_ms = EXCLUDED.breaker_cooldown_ms, updated_at = now()` + where + `
	RETURNING target, updated_at)
SELECT put.updated_at FROM put` + changed("put")
}

var putDefaultSQL = `/* flow.put_default */
WITH put AS (
	INSERT INTO flow_limits (` + limitColumns + `) VALUES ($1, $2, $3, greatest($4, 1), $5, $6, $7, $8, $9, $10, $11)
	ON CONFLICT (target) DO NOTHING
	RETURNING target)
SELECT put.target FROM put` + changed("put")

const selectSQL = `/* flow.select */ SELECT ` + limitColumns + `, updated_at FROM flow_limits`

var deleteSQL = `/* flow.delete */
WITH gone AS (DELETE FROM flow_limits WHERE target = $1 RETURNING target)
SELECT gone.target FROM gone` + changed("gone")
