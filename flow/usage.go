package flow

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// UsageWindow is how far back Usage looks: a target whose theoretical
// arrival time is older than this has been idle long enough not to matter.
const UsageWindow = time.Hour

// usageMax bounds the targets Usage returns.
const usageMax = 500

// Use is the pacing state of one concrete target booked lately.
type Use struct {
	Target string `json:"target"`
	// Limit is the limit in force for the target: its own or its kind's
	// default; empty when none is (it was removed since the booking).
	Limit string `json:"limit,omitempty"`
	// Wait is how long until the next call would pass, on the database's
	// clock when read; 0 when a call passes now.
	Wait time.Duration `json:"wait"`
	// InFlight is how many calls hold one of its concurrency slots now,
	// and Cap how many it has (0: no concurrency limit): at Cap, the next
	// call waits for one to end, whatever Wait says.
	InFlight int `json:"in_flight,omitempty"`
	Cap      int `json:"cap,omitempty"`
}

// Usage returns the concrete targets booked within UsageWindow (at most
// usageMax, by target) with how long until each lets the next call
// through, read on the database's clock.
func (s *Store) Usage(ctx context.Context) ([]Use, error) {
	limits, err := s.List(ctx)
	if err != nil {
		return nil, err
	}
	byTarget := make(map[string]Limit, len(limits))
	for _, l := range limits {
		byTarget[l.Target] = l
	}
	rows, err := s.db.Query(ctx, usageSQL, UsageWindow.Microseconds(), usageMax)
	if err != nil {
		return nil, fmt.Errorf("reading the use of the limits: %w", err)
	}
	type state struct {
		target   string
		tat, now time.Time
	}
	states, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (state, error) {
		var st state
		return st, row.Scan(&st.target, &st.tat, &st.now)
	})
	if err != nil {
		return nil, fmt.Errorf("reading the use of the limits: %w", err)
	}
	held, err := s.inFlight(ctx)
	if err != nil {
		return nil, err
	}
	uses := make([]Use, 0, len(states))
	seen := map[string]bool{}
	for _, st := range states {
		seen[st.target] = true
		u := Use{Target: st.target}
		target, tokens := strings.CutSuffix(st.target, "#tokens")
		lim, ok := byTarget[target]
		if !ok {
			lim, ok = byTarget[KindDefault(kindOf(target))]
		}
		switch {
		case ok && tokens && !lim.Tokens.IsZero():
			u.Target, u.Limit = target+" (tokens)", lim.Target
			u.Wait = max(st.tat.Add(-lim.Tokens.Per).Sub(st.now), 0) // see tokens.go
		case ok && !tokens:
			// The limit in force, whatever it sets: one whose rate was
			// dropped since the booking (a concurrency alone) still holds
			// the target.
			u.Limit = lim.Target
			if !lim.Rate.IsZero() {
				// A call passes once the arrival time is within the
				// burst's tolerance of now (see takeSQL).
				u.Wait = max(st.tat.Add(-lim.tolerance()).Sub(st.now), 0)
			}
		}
		if !tokens {
			u.InFlight = held[target]
			if ok {
				u.Cap = lim.Concurrency
			}
		}
		uses = append(uses, u)
	}
	// A target limited by its concurrency alone books no rate: it shows
	// while calls hold its slots.
	for target, n := range held {
		if seen[target] || n == 0 {
			continue
		}
		u := Use{Target: target, InFlight: n}
		lim, ok := byTarget[target]
		if !ok {
			lim, ok = byTarget[KindDefault(kindOf(target))]
		}
		if ok {
			u.Limit, u.Cap = lim.Target, lim.Concurrency
		}
		uses = append(uses, u)
	}
	slices.SortFunc(uses, func(a, b Use) int { return strings.Compare(a.Target, b.Target) })
	return uses, nil
}

// inFlight counts the calls holding a concurrency slot now, by target.
func (s *Store) inFlight(ctx context.Context) (map[string]int, error) {
	rows, err := s.db.Query(ctx, inFlightSQL)
	if err != nil {
		return nil, fmt.Errorf("reading the calls in flight: %w", err)
	}
	out := map[string]int{}
	var target string
	var n int
	_, err = pgx.ForEachRow(rows, []any{&target, &n}, func() error {
		out[target] = n
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading the calls in flight: %w", err)
	}
	return out, nil
}

const inFlightSQL = `/* flow.in_flight */
SELECT target, count(*) FROM flow_slots
WHERE holder IS NOT NULL AND expires_at > clock_timestamp()
GROUP BY target`

// kindOf is the kind of a stored, normalised target.
func kindOf(target string) string {
	kind, _, _ := strings.Cut(target, ":")
	return kind
}

const usageSQL = `/* flow.usage */
SELECT target, tat, clock_timestamp() FROM flow_state
WHERE tat > clock_timestamp() - $1::bigint * interval '1 microsecond'
ORDER BY target LIMIT $2`
