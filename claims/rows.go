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
		LeaseOwner:      deref(r.LeaseOwner),
		LeaseToken:      r.LeaseToken,
		LeaseExpiresAt:  r.LeaseExpiresAt,
		CancelRequested: r.CancelRequestedAt,
		Result:          json.RawMessage(r.Result),
		LastError:       deref(r.LastError),
		SubmissionKey:   deref(r.SubmissionKey),
		CreatedAt:       r.CreatedAt,
		UpdatedAt:       r.UpdatedAt,
		FinishedAt:      r.FinishedAt,
	}
}

func collectTasks(rows pgx.Rows) ([]*agentledger.Task, error) {
	rs, err := pgx.CollectRows(rows, pgx.RowToAddrOfStructByName[taskRow])
	if err != nil {
		return nil, err
	}
	out := make([]*agentledger.Task, len(rs))
	for i, r := range rs {
		out[i] = r.toTask()
	}
	return out, nil
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
