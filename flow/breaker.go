package flow

import (
	"context"
	"errors"
	"fmt"
	"github.com/jackc/pgx/v5/pgconn"
	"time"

	"github.com/jackc/pgx/v5"
)

// The states of a circuit breaker.
const (
	Closed   = "closed"
	Open     = "open"
	HalfOpen = "half_open"
)

// BreakerState is a target's shared circuit breaker as stored.
type BreakerState struct {
	Target string `json:"target"`
	State  string `json:"state"`
	// Failures counts the failed calls since WindowStart (closed), or
	// those that opened it (open, half_open).
	Failures    int        `json:"failures"`
	WindowStart *time.Time `json:"window_start,omitempty"`
	// OpenUntil is when an open breaker lets a probe through; nil when an
	// operator opened it until they close it.
	OpenUntil *time.Time `json:"open_until,omitempty"`
	// Manual is true when an operator opened it.
	Manual bool `json:"manual"`
	// ProbeUntil is when a half-open breaker's probe lease ends.
	ProbeUntil *time.Time `json:"probe_until,omitempty"`
	LastError  string     `json:"last_error,omitempty"`
	Opens      int64      `json:"opens"`
	ChangedAt  time.Time  `json:"changed_at"`
}

// breakerView is what a Limiter keeps of a breaker that is not closed,
// with the database's clock when read, so that waits are measured on one
// clock whatever the daemon's says.
type breakerView struct {
	BreakerState
	dbNow   time.Time // the database's clock when read
	localAt time.Time // the daemon's clock then
	stale   bool      // a probe was lost to another call: read again
}

// local converts a time on the database's clock to the daemon's.
func (v *breakerView) local(t time.Time) time.Time { return v.localAt.Add(t.Sub(v.dbNow)) }

// loadBreakers reads the breakers that are not closed.
func loadBreakers(ctx context.Context, db DB) (map[string]*breakerView, error) {
	rows, err := db.Query(ctx, `/* flow.breakers_open */ SELECT `+breakerColumns+`, clock_timestamp() FROM flow_breakers WHERE state <> 'closed'`)
	if err != nil {
		return nil, fmt.Errorf("reading the circuit breakers: %w", err)
	}
	local := time.Now()
	vs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (*breakerView, error) {
		v := &breakerView{localAt: local}
		return v, row.Scan(append(v.dests(), &v.dbNow)...)
	})
	if err != nil {
		return nil, fmt.Errorf("reading the circuit breakers: %w", err)
	}
	m := make(map[string]*breakerView, len(vs))
	for _, v := range vs {
		m[v.Target] = v
	}
	return m, nil
}

const breakerColumns = `target, state, failures, window_start, open_until, manual, probe_until, coalesce(last_error, '') AS last_error, opens, changed_at`

// breakerColumnsOf is breakerColumns of the table aliased as alias.
func breakerColumnsOf(alias string) string {
	return alias + `.target, ` + alias + `.state, ` + alias + `.failures, ` + alias + `.window_start, ` + alias + `.open_until, ` +
		alias + `.manual, ` + alias + `.probe_until, coalesce(` + alias + `.last_error, '') AS last_error, ` + alias + `.opens, ` + alias + `.changed_at`
}

func (b *BreakerState) dests() []any {
	return []any{&b.Target, &b.State, &b.Failures, &b.WindowStart, &b.OpenUntil, &b.Manual, &b.ProbeUntil, &b.LastError, &b.Opens, &b.ChangedAt}
}

// recordFailure counts a failed call of target against its breaker and
// opens it when the failures within the window reach the limit; opened
// reports that this failure did. A breaker that is not closed counts
// nothing: it is returned as it is.
func recordFailure(ctx context.Context, db DB, target string, b *Breaker, reason string) (v *breakerView, opened bool, err error) {
	v = &breakerView{}
	err = db.QueryRow(ctx, failureSQL, target, b.Window.Milliseconds(), b.Failures, b.Cooldown.Milliseconds(), reason).
		Scan(append(v.dests(), &v.dbNow)...)
	v.localAt = time.Now()
	if errors.Is(err, pgx.ErrNoRows) {
		v, err = readBreaker(ctx, db, target) // not closed: opened by another call meanwhile
		return v, false, err
	}
	if err != nil {
		return nil, false, fmt.Errorf("circuit breaker of %s: %w", target, err)
	}
	return v, v.State == Open, nil
}

// readBreaker reads target's breaker; a target whose breaker never counted
// a failure is closed.
func readBreaker(ctx context.Context, db DB, target string) (*breakerView, error) {
	v := &breakerView{}
	err := db.QueryRow(ctx, `/* flow.breaker */ SELECT `+breakerColumns+`, clock_timestamp() FROM flow_breakers WHERE target = $1`, target).
		Scan(append(v.dests(), &v.dbNow)...)
	v.localAt = time.Now()
	if errors.Is(err, pgx.ErrNoRows) {
		return &breakerView{BreakerState: BreakerState{Target: target, State: Closed}, dbNow: v.localAt, localAt: v.localAt}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("circuit breaker of %s: %w", target, err)
	}
	return v, nil
}

// claimProbe makes this call the half-open probe of target's breaker if
// it is open and its cool-down is over, or its last probe's lease ended.
func claimProbe(ctx context.Context, db DB, target string, lease time.Duration) (bool, error) {
	err := db.QueryRow(ctx, claimProbeSQL, target, lease.Milliseconds()).Scan(new(string))
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("circuit breaker of %s: %w", target, err)
	}
	return true, nil
}

// endProbe closes target's half-open breaker (the probe succeeded), opens
// it again for cooldown (it failed), or opens it again at once so another
// call may probe (it never ran: cooldown 0). changed says whether the
// breaker was still half-open (an operator may have closed it meanwhile).
func endProbe(ctx context.Context, db DB, target string, succeeded bool, cooldown time.Duration, reason string) (changed bool, err error) {
	var tag pgconn.CommandTag
	if succeeded {
		tag, err = db.Exec(ctx, closeProbeSQL, target)
	} else {
		tag, err = db.Exec(ctx, reopenSQL, target, cooldown.Milliseconds(), reason)
	}
	if err != nil {
		return false, fmt.Errorf("circuit breaker of %s: %w", target, err)
	}
	return tag.RowsAffected() > 0, nil
}

// announceIf is appended to a statement whose CTE "b" returns the target
// of a breaker it changed: when cond holds, daemons are told to drop their
// cached view at once.
func announceIf(cond string) string {
	return ` CROSS JOIN LATERAL (SELECT CASE WHEN ` + cond + ` THEN pg_notify('` + Channel + `', 'breaker ' || b.target) END) AS announced`
}

// freshWindow holds when a closed breaker's window began longer than $2 ms
// ago (or never): the failure being counted starts a new one.
const freshWindow = `(f.window_start IS NULL OR f.window_start < clock_timestamp() - $2::bigint * interval '1 millisecond')`

// failuresNow is the count of failures once this one is counted.
const failuresNow = `(CASE WHEN ` + freshWindow + ` THEN 1 ELSE f.failures + 1 END)`

// failureSQL: one failure more within the window of $2 ms, opening the
// breaker for $4 ms when the count reaches $3. Only a closed breaker
// counts: an open or half-open one returns no row.
var failureSQL = `/* flow.breaker_failure */
WITH b AS (
	INSERT INTO flow_breakers AS f (target, state, failures, window_start, open_until, last_error, opens, changed_at)
	VALUES ($1, CASE WHEN $3 <= 1 THEN 'open' ELSE 'closed' END, 1, clock_timestamp(),
		CASE WHEN $3 <= 1 THEN clock_timestamp() + $4::bigint * interval '1 millisecond' END, $5,
		CASE WHEN $3 <= 1 THEN 1 ELSE 0 END, clock_timestamp())
	ON CONFLICT (target) DO UPDATE SET
		failures = ` + failuresNow + `,
		window_start = CASE WHEN ` + freshWindow + ` THEN clock_timestamp() ELSE f.window_start END,
		state = CASE WHEN ` + failuresNow + ` >= $3 THEN 'open' ELSE 'closed' END,
		open_until = CASE WHEN ` + failuresNow + ` >= $3 THEN clock_timestamp() + $4::bigint * interval '1 millisecond' END,
		opens = f.opens + CASE WHEN ` + failuresNow + ` >= $3 THEN 1 ELSE 0 END,
		last_error = $5, changed_at = clock_timestamp()
	WHERE f.state = 'closed'
	RETURNING ` + breakerColumnsOf("f") + `)
SELECT b.*, clock_timestamp() FROM b` + announceIf("b.state = 'open'")

// claimProbeSQL moves an open breaker whose cool-down is over (not one an
// operator opened), or a half-open one whose probe's lease ended, to
// half-open with a probe leased for $2 ms.
var claimProbeSQL = `/* flow.breaker_probe */
WITH b AS (
	UPDATE flow_breakers SET state = 'half_open', probe_until = clock_timestamp() + $2::bigint * interval '1 millisecond',
		changed_at = clock_timestamp()
	WHERE target = $1 AND ((state = 'open' AND open_until <= clock_timestamp())
		OR (state = 'half_open' AND probe_until <= clock_timestamp()))
	RETURNING target)
SELECT b.target FROM b` + announceIf("true")

// closeProbeSQL closes a half-open breaker: its probe succeeded.
var closeProbeSQL = `/* flow.breaker_close_probe */
WITH b AS (
	UPDATE flow_breakers SET state = 'closed', failures = 0, window_start = NULL, open_until = NULL,
		probe_until = NULL, manual = false, changed_at = clock_timestamp()
	WHERE target = $1 AND state = 'half_open'
	RETURNING target)
SELECT b.target FROM b` + announceIf("true")

// reopenSQL opens a half-open breaker again for $2 ms: its probe failed
// ($3 says how), or never ran ($2 = 0, so another call probes at once).
var reopenSQL = `/* flow.breaker_reopen */
WITH b AS (
	UPDATE flow_breakers SET state = 'open', open_until = clock_timestamp() + $2::bigint * interval '1 millisecond',
		probe_until = NULL, opens = opens + CASE WHEN $2 > 0 THEN 1 ELSE 0 END,
		last_error = CASE WHEN $3 = '' THEN last_error ELSE $3 END, changed_at = clock_timestamp()
	WHERE target = $1 AND state = 'half_open'
	RETURNING target)
SELECT b.target FROM b` + announceIf("true")
