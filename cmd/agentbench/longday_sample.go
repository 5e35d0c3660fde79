package main

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// ldTables are the tables whose sizes a long day follows: the four the
// janitor keeps to its retention, and those of approvals and waits.
var ldTables = []string{"tasks", "task_attempts", "ledger", "outbox", "approvals", "waits", "signals"}

// TableSample is one table's size and vacuum state at one moment.
type TableSample struct {
	Total, Indexes int64 // pg_total_relation_size, pg_indexes_size; bytes
	Live, Dead     int64 // n_live_tup, n_dead_tup
	LastAutovacuum time.Time
	Autovacuums    int64
}

// tableSizesSQL reads every table of ldTables at once.
const tableSizesSQL = `
SELECT relname, pg_total_relation_size(relid), pg_indexes_size(relid), n_live_tup, n_dead_tup,
	coalesce(last_autovacuum, 'epoch'), autovacuum_count
FROM pg_stat_user_tables WHERE relname = ANY($1)`

// sampleTables reads the sizes of ldTables.
func sampleTables(ctx context.Context, pool *pgxpool.Pool) (map[string]TableSample, error) {
	rows, err := pool.Query(ctx, tableSizesSQL, ldTables)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]TableSample{}
	for rows.Next() {
		var name string
		var s TableSample
		if err := rows.Scan(&name, &s.Total, &s.Indexes, &s.Live, &s.Dead, &s.LastAutovacuum, &s.Autovacuums); err != nil {
			return nil, err
		}
		if s.LastAutovacuum.Unix() == 0 {
			s.LastAutovacuum = time.Time{}
		}
		out[name] = s
	}
	return out, rows.Err()
}

// finishedSQL lists the tasks that finished in [$1, $2) on the database's
// clock, with their class (cron's are its noop tasks), enqueue → finish
// time, id and finish. The state list lets the partial index on
// finished_at serve it.
const finishedSQL = `
SELECT CASE WHEN kind = 'noop' THEN 'cron' ELSE split_part(submission_key, '-', 2) END, state,
	extract(epoch FROM finished_at - created_at), id, finished_at
FROM tasks
WHERE finished_at >= $1 AND finished_at < $2 AND state IN ('succeeded', 'dead', 'cancelled', 'compensated')`

// ClassWindow is what finished in a window, of one class or of all.
type ClassWindow struct {
	Finished int
	// Lat is enqueue → finish; of all classes together, only of those
	// that do not wait on purpose (see waitingClasses).
	Lat Percentiles
	// Unexpected counts tasks that ended in another state than their
	// class ends in (a saga compensated, a denied approval dead, the rest
	// succeeded).
	Unexpected int
}

// waitingClasses wait on purpose, for a person, a signal or a timer: their
// enqueue → finish time is mostly that wait, so the overall percentiles
// leave them out (each class has its own).
var waitingClasses = map[string]bool{classApprove: true, classDeny: true, classSignal: true, classTimer: true}

// finishes reads what finished, window by window up to a frontier on the
// database's clock (frontierSQL), counting each task once. A frontier
// read behind the last one is not followed (Behind), and a task read
// again is not counted again: Reread if its finish is the one read
// before (windows that overlapped), Refinished if it was stamped again.
// The effects check counts on these figures, so a counting slip shows as
// itself, not as effects missing.
type finishes struct {
	pool *pgxpool.Pool
	from time.Time
	// seen holds the tasks counted, with their finish, back to
	// seenFor before the frontier.
	seen                       map[int64]time.Time
	Behind, Reread, Refinished int
}

// seenFor is how long finishes remembers a task it counted.
const seenFor = time.Minute

func newFinishes(pool *pgxpool.Pool, from time.Time) *finishes {
	return &finishes{pool: pool, from: from, seen: map[int64]time.Time{}}
}

// upTo reads the tasks that finished from the last frontier up to to:
// every class together and each class apart.
func (f *finishes) upTo(ctx context.Context, to time.Time) (ClassWindow, map[string]ClassWindow, error) {
	if !to.After(f.from) {
		if to.Before(f.from) {
			f.Behind++
		}
		return ClassWindow{}, map[string]ClassWindow{}, nil
	}
	rows, err := f.pool.Query(ctx, finishedSQL, f.from, to)
	if err != nil {
		return ClassWindow{}, nil, err
	}
	defer rows.Close()
	var all []time.Duration
	n := 0
	by := map[string][]time.Duration{}
	unexpected := map[string]int{}
	for rows.Next() {
		var class, state string
		var secs float64
		var id int64
		var at time.Time
		if err := rows.Scan(&class, &state, &secs, &id, &at); err != nil {
			return ClassWindow{}, nil, err
		}
		if before, ok := f.seen[id]; ok {
			if before.Equal(at) {
				f.Reread++
			} else {
				f.Refinished++
			}
			continue
		}
		f.seen[id] = at
		d := time.Duration(secs * float64(time.Second))
		if !waitingClasses[class] {
			all = append(all, d)
		}
		n++
		by[class] = append(by[class], d)
		if state != expectedState(class) {
			unexpected[class]++
		}
	}
	if err := rows.Err(); err != nil {
		return ClassWindow{}, nil, err
	}
	f.from = to
	for id, at := range f.seen {
		if at.Before(to.Add(-seenFor)) {
			delete(f.seen, id)
		}
	}
	total := ClassWindow{Finished: n, Lat: Summarise(all)}
	out := map[string]ClassWindow{}
	for c, ds := range by {
		out[c] = ClassWindow{Finished: len(ds), Lat: Summarise(ds), Unexpected: unexpected[c]}
		total.Unexpected += unexpected[c]
	}
	return total, out, nil
}

// unfinishedSQL counts the unfinished tasks by state (named, so that the
// index on state serves it rather than a scan of the finished ones).
const unfinishedSQL = `SELECT state, count(*) FROM tasks
WHERE state IN ('queued', 'waiting', 'running', 'retrying', 'needs_attention', 'compensating') GROUP BY state`

// sampleUnfinished returns the count of unfinished tasks by state.
func sampleUnfinished(ctx context.Context, pool *pgxpool.Pool) (map[string]int64, error) {
	rows, err := pool.Query(ctx, unfinishedSQL)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var s string
		var n int64
		if err := rows.Scan(&s, &n); err != nil {
			return nil, err
		}
		out[s] = n
	}
	return out, rows.Err()
}

// outboxPending counts the notifications not yet delivered.
func outboxPending(ctx context.Context, pool *pgxpool.Pool) (int64, error) {
	var n int64
	err := pool.QueryRow(ctx, "SELECT count(*) FROM outbox WHERE state = 'pending'").Scan(&n)
	return n, err
}
