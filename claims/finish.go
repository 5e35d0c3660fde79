package claims

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/agentledger/agentledger"
)

// Success is one attempt that finished well.
type Success struct {
	Lease  agentledger.Lease
	Result json.RawMessage // nil stores SQL NULL
}

// Failure is one attempt that failed.
type Failure struct {
	Lease agentledger.Lease
	Error string
	// Delay before the next attempt when the task retries.
	Delay time.Duration
	// Final dead-letters the task now, whatever attempts remain.
	Final bool
}

// Succeed finishes one attempt successfully; ErrLeaseLost if its token is
// stale, in which case nothing changed.
func (s *Store) Succeed(ctx context.Context, l agentledger.Lease, result json.RawMessage) error {
	lost, err := s.SucceedMany(ctx, []Success{{Lease: l, Result: result}})
	return single(err, lost)
}

// SucceedMany finishes attempts in one statement and returns the leases that
// were lost (their writes changed nothing).
func (s *Store) SucceedMany(ctx context.Context, done []Success) ([]agentledger.Lease, error) {
	if len(done) == 0 {
		return nil, nil
	}
	ids, tokens := make([]int64, len(done)), make([]int64, len(done))
	// The results go as one JSON object keyed by task id (see succeedSQL).
	results := make([]byte, 0, 64*len(done))
	results = append(results, '{')
	for i, d := range done {
		ids[i], tokens[i] = d.Lease.TaskID, d.Lease.Token
		if d.Result == nil {
			continue
		}
		if !json.Valid(d.Result) {
			return nil, agentledger.Invalid("result", "task %d: not valid JSON", d.Lease.TaskID)
		}
		if len(results) > 1 {
			results = append(results, ',')
		}
		results = append(results, '"')
		results = strconv.AppendInt(results, d.Lease.TaskID, 10)
		results = append(results, '"', ':')
		results = append(results, agentledger.SafeJSON(d.Result)...)
	}
	results = append(results, '}')
	rows, err := s.db.Query(ctx, succeedSQL, ids, tokenMap(ids, tokens), string(results), s.Now.Param())
	if err != nil {
		return nil, fmt.Errorf("succeed: %w", err)
	}
	won, err := collectIDs(rows)
	if err != nil {
		return nil, fmt.Errorf("succeed: %w", err)
	}
	return lostOf(won, leasesOf(done, func(d Success) agentledger.Lease { return d.Lease })), nil
}

// Fail records one failed attempt and returns the task's new state
// (retrying or dead); ErrLeaseLost if its token is stale.
func (s *Store) Fail(ctx context.Context, f Failure) (agentledger.TaskState, error) {
	states, lost, err := s.FailMany(ctx, []Failure{f})
	if err := single(err, lost); err != nil {
		return "", err
	}
	return states[f.Lease.TaskID], nil
}

// FailMany records failed attempts in one statement. It returns the new state
// of each task it changed and the leases that were lost.
func (s *Store) FailMany(ctx context.Context, fs []Failure) (map[int64]agentledger.TaskState, []agentledger.Lease, error) {
	if len(fs) == 0 {
		return nil, nil, nil
	}
	n := len(fs)
	ids, tokens := make([]int64, n), make([]int64, n)
	// The failures go as one JSON object keyed by task id (see failSQL).
	type failure struct {
		Error   string `json:"error"`
		DelayMS int64  `json:"delay_ms"`
		Final   bool   `json:"final"`
	}
	byID := make(map[string]failure, n)
	for i, f := range fs {
		ids[i], tokens[i] = f.Lease.TaskID, f.Lease.Token
		byID[strconv.FormatInt(f.Lease.TaskID, 10)] = failure{agentledger.SafeText(f.Error), f.Delay.Milliseconds(), f.Final}
	}
	failures, err := json.Marshal(byID)
	if err != nil {
		return nil, nil, fmt.Errorf("fail: %w", err)
	}
	rows, err := s.db.Query(ctx, failSQL, ids, tokenMap(ids, tokens), string(failures), s.Now.Param())
	if err != nil {
		return nil, nil, fmt.Errorf("fail: %w", err)
	}
	states := map[int64]agentledger.TaskState{}
	for rows.Next() {
		var id int64
		var st string
		if err := rows.Scan(&id, &st); err != nil {
			rows.Close()
			return nil, nil, fmt.Errorf("fail: %w", err)
		}
		states[id] = agentledger.TaskState(st)
	}
	if err := rows.Err(); err != nil {
		return nil, nil, fmt.Errorf("fail: %w", err)
	}
	won := make(map[int64]bool, len(states))
	for id := range states {
		won[id] = true
	}
	return states, lostOf(won, leasesOf(fs, func(f Failure) agentledger.Lease { return f.Lease })), nil
}

// Release hands one task back to its queue at once without counting the
// attempt (graceful shutdown); ErrLeaseLost if its token is stale.
func (s *Store) Release(ctx context.Context, l agentledger.Lease) error {
	lost, err := s.ReleaseMany(ctx, []agentledger.Lease{l})
	return single(err, lost)
}

// ReleaseMany releases tasks in one statement, wakes the daemons listening
// on their queues, and returns the leases that were lost.
func (s *Store) ReleaseMany(ctx context.Context, leases []agentledger.Lease) ([]agentledger.Lease, error) {
	if len(leases) == 0 {
		return nil, nil
	}
	ids, tokens := split(leases)
	rows, err := s.db.Query(ctx, releaseSQL, ids, tokenMap(ids, tokens), s.Now.Param())
	if err != nil {
		return nil, fmt.Errorf("release: %w", err)
	}
	won, err := collectIDs(rows)
	if err != nil {
		return nil, fmt.Errorf("release: %w", err)
	}
	return lostOf(won, leases), nil
}

// Deferral is one attempt that waited for a limit and did nothing
// outside: its task runs again at Until without counting the attempt.
type Deferral struct {
	Lease  agentledger.Lease
	Until  time.Time
	Reason string
	// Park makes the task waiting, not queued, until woken (Wake) or
	// Until (WakeDue): agentledger.DeferredError.Park.
	Park bool
	// Performed records the attempt whatever came before: it sent a call
	// (agentledger.DeferredError.Performed).
	Performed bool
}

// Defer hands one task back to its queue to run at d.Until, not counting
// the attempt, with d.Reason shown until it is claimed again; ErrLeaseLost
// if its token is stale, in which case nothing changed.
func (s *Store) Defer(ctx context.Context, d Deferral) error {
	lost, err := s.DeferMany(ctx, []Deferral{d})
	return single(err, lost)
}

// DeferMany defers attempts in one statement and returns the leases that
// were lost.
func (s *Store) DeferMany(ctx context.Context, ds []Deferral) ([]agentledger.Lease, error) {
	if len(ds) == 0 {
		return nil, nil
	}
	type deferral struct {
		Until     time.Time `json:"until"`
		Reason    string    `json:"reason"`
		Park      bool      `json:"park,omitempty"`
		Performed bool      `json:"performed,omitempty"`
	}
	ids, tokens := make([]int64, len(ds)), make([]int64, len(ds))
	byID := make(map[string]deferral, len(ds))
	for i, d := range ds {
		if d.Until.IsZero() {
			return nil, agentledger.Invalid("until", "task %d: a deferral needs a time to run again", d.Lease.TaskID)
		}
		ids[i], tokens[i] = d.Lease.TaskID, d.Lease.Token
		byID[strconv.FormatInt(d.Lease.TaskID, 10)] = deferral{d.Until, agentledger.SafeText(d.Reason), d.Park, d.Performed}
	}
	deferrals, err := json.Marshal(byID)
	if err != nil {
		return nil, fmt.Errorf("defer: %w", err)
	}
	rows, err := s.db.Query(ctx, deferSQL, ids, tokenMap(ids, tokens), string(deferrals), s.Now.Param())
	if err != nil {
		return nil, fmt.Errorf("defer: %w", err)
	}
	won, err := collectIDs(rows)
	if err != nil {
		return nil, fmt.Errorf("defer: %w", err)
	}
	return lostOf(won, leasesOf(ds, func(d Deferral) agentledger.Lease { return d.Lease })), nil
}

// Cancelled is a running attempt's acknowledgement that an operator
// cancelled its task: the task ends cancelled with reason kept. ErrLeaseLost
// if the token is stale.
func (s *Store) Cancelled(ctx context.Context, l agentledger.Lease, reason string) error {
	return s.stop(ctx, l, agentledger.StateCancelled, reason)
}

// NeedsAttention parks a task whose attempt met an effect of unknown outcome
// that its class forbids performing blindly; an operator resolves it.
// ErrLeaseLost if the token is stale.
func (s *Store) NeedsAttention(ctx context.Context, l agentledger.Lease, reason string) error {
	return s.stop(ctx, l, agentledger.StateNeedsAttention, reason)
}

// stop ends a running attempt in state, fenced on its token.
func (s *Store) stop(ctx context.Context, l agentledger.Lease, state agentledger.TaskState, reason string) error {
	var id int64
	err := s.db.QueryRow(ctx, stopSQL, []int64{l.TaskID}, tokenMap([]int64{l.TaskID}, []int64{l.Token}),
		agentledger.SafeText(reason), s.Now.Param(), string(state)).Scan(&id)
	if err := notFound(err); err == agentledger.ErrNotFound {
		return agentledger.Errorf(agentledger.CodeLeaseLost, "task %d: its lease (token %d) was lost: another worker holds it, or it expired", l.TaskID, l.Token)
	} else if err != nil {
		return fmt.Errorf("%s: %w", state, err)
	}
	return nil
}

func collectIDs(rows interface {
	Next() bool
	Scan(...any) error
	Err() error
	Close()
}) (map[int64]bool, error) {
	won := map[int64]bool{}
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return nil, err
		}
		won[id] = true
	}
	return won, rows.Err()
}

func leasesOf[T any](xs []T, f func(T) agentledger.Lease) []agentledger.Lease {
	out := make([]agentledger.Lease, len(xs))
	for i, x := range xs {
		out[i] = f(x)
	}
	return out
}

func lostOf(won map[int64]bool, leases []agentledger.Lease) []agentledger.Lease {
	var lost []agentledger.Lease
	for _, l := range leases {
		if !won[l.TaskID] {
			lost = append(lost, l)
		}
	}
	return lost
}

// single turns a one-lease batch result into ErrLeaseLost.
func single(err error, lost []agentledger.Lease) error {
	if err != nil {
		return err
	}
	if len(lost) > 0 {
		return agentledger.Errorf(agentledger.CodeLeaseLost, "task %d: its lease (token %d) was lost: another worker holds it, or it expired", lost[0].TaskID, lost[0].Token)
	}
	return nil
}

// tokenMap is the JSON object of the finishing statements' $2: each task
// id's fencing token (see claims/queries.go, fenced).
func tokenMap(ids, tokens []int64) string {
	b := make([]byte, 0, 24*len(ids)+2)
	b = append(b, '{')
	for i, id := range ids {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = strconv.AppendInt(b, id, 10)
		b = append(b, '"', ':')
		b = strconv.AppendInt(b, tokens[i], 10)
	}
	return string(append(b, '}'))
}
