package claims

import (
	"encoding/json"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentledger/agentledger"
)

// taskRow is a tasks row as scanned; toTask maps it to the domain type so
// callers never see pgx types.
type taskRow struct {
	ID                int64
	Tenant            string
	Queue             string
	Kind              string
	Payload           []byte
	Priority          int16
	RunAt             time.Time `db:"run_at"`
	State             string
	Attempt           int32
	MaxAttempts       int32 `db:"max_attempts"`
	Generation        int32
	LeaseOwner        *string    `db:"lease_owner"`
	LeaseToken        int64      `db:"lease_token"`
	LeaseExpiresAt    *time.Time `db:"lease_expires_at"`
	CancelRequestedAt *time.Time `db:"cancel_requested_at"`
	Result            []byte
	LastError         *string    `db:"last_error"`
	SubmissionKey     *string    `db:"submission_key"`
	CreatedAt         time.Time  `db:"created_at"`
	UpdatedAt         time.Time  `db:"updated_at"`
	FinishedAt        *time.Time `db:"finished_at"`
	WaitReason        *string    `db:"wait_reason"`
	Compensation      *string
	TraceParent       *string
	ReplayTraceParent *string
	GenerationClaims  int32 `db:"generation_claims"`
	Needs             []string
}

func (r *taskRow) toTask() *agentledger.Task {
	return &agentledger.Task{
		ID:              r.ID,
		Tenant:          r.Tenant,
		Queue:           r.Queue,
		Kind:            r.Kind,
		Payload:         json.RawMessage(r.Payload),
		Priority:        r.Priority,
		RunAt:           r.RunAt,
		State:           agentledger.TaskState(r.State),
		Attempt:         r.Attempt,
		MaxAttempts:     r.MaxAttempts,
		Generation:      r.Generation,
		LeaseOwner:      leaseOwner(r),
		LeaseToken:      r.LeaseToken,
		LeaseExpiresAt:  r.LeaseExpiresAt,
		CancelRequested: r.CancelRequestedAt,
		Result:          json.RawMessage(r.Result),
		LastError:       deref(r.LastError),
		SubmissionKey:   deref(r.SubmissionKey),
		CreatedAt:       r.CreatedAt,
		UpdatedAt:       r.UpdatedAt,
		FinishedAt:      r.FinishedAt,
		WaitReason:      deref(r.WaitReason),
		Compensation:    deref(r.Compensation),

		TraceParent:       deref(r.TraceParent),
		ReplayTraceParent: deref(r.ReplayTraceParent),
		GenerationClaims:  r.GenerationClaims,
		Needs:             r.Needs,
	}
}

// collectTasks scans rows of taskColumns. It scans by position rather than
// by name: claims return thousands of rows a second, and reflection was a
// tenth of the worker's CPU.
func collectTasks(rows pgx.Rows) ([]*agentledger.Task, error) {
	return scanTasks(rows, nil, nil)
}

// collectClaimed scans a claim's rows: taskColumns, whether the claim's
// newcomer lane took the task, and, when last is not nil, the last tenant
// the claim served in rotation order (claimRunSQL's last column). It
// returns the tasks and the ids the lane took (nil when it took none, as
// in nearly every claim).
func collectClaimed(rows pgx.Rows, last **string) (tasks []*agentledger.Task, laned map[int64]bool, err error) {
	var lane bool
	extra := []any{&lane}
	if last != nil {
		extra = append(extra, last)
	}
	tasks, err = scanTasks(rows, extra, func(t *agentledger.Task) {
		if lane {
			if laned == nil {
				laned = map[int64]bool{}
			}
			laned[t.ID] = true
		}
	})
	return tasks, laned, err
}

// scanTasks scans rows of taskColumns, then the columns of extra, calling
// each (if set) on every task with extra filled in.
func scanTasks(rows pgx.Rows, extra []any, each func(*agentledger.Task)) ([]*agentledger.Task, error) {
	defer rows.Close()
	var out []*agentledger.Task
	// One row and one list of scan targets serve every row: a claim of
	// 1,000 tasks allocated both 1,000 times (toTask copies the row out).
	var r taskRow
	fields := append(r.fields(), extra...)
	for rows.Next() {
		r = taskRow{}
		if err := rows.Scan(fields...); err != nil {
			return nil, err
		}
		t := r.toTask()
		out = append(out, t)
		if each != nil {
			each(t)
		}
	}
	return out, rows.Err()
}

// fields are r's scan targets in taskColumns order.
func (r *taskRow) fields() []any {
	return []any{&r.ID, &r.Tenant, &r.Queue, &r.Kind, &r.Payload, &r.Priority, &r.RunAt, &r.State,
		&r.Attempt, &r.MaxAttempts, &r.Generation, &r.LeaseOwner, &r.LeaseToken, &r.LeaseExpiresAt,
		&r.CancelRequestedAt, &r.Result, &r.LastError, &r.SubmissionKey, &r.CreatedAt,
		&r.UpdatedAt, &r.FinishedAt, &r.WaitReason, &r.Compensation, &r.TraceParent, &r.ReplayTraceParent,
		&r.GenerationClaims, &r.Needs}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// notFound maps pgx.ErrNoRows to agentledger.ErrNotFound.
func notFound(err error) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return agentledger.ErrNotFound
	}
	return err
}

// leaseOwner is the lease holder of a running task. A finished attempt
// leaves its worker on the row (the attempt records say who ran each); it
// holds no lease.
func leaseOwner(r *taskRow) string {
	if r.State != string(agentledger.StateRunning) {
		return ""
	}
	return deref(r.LeaseOwner)
}
