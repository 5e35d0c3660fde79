package claims

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentledger/agentledger"
)

// Get returns task id. A non-empty tenant restricts the look-up to that
// tenant (another tenant's task is ErrNotFound, never a permission error).
func (s *Store) Get(ctx context.Context, tenant string, id int64) (*agentledger.Task, error) {
	t, err := s.one(ctx, "get task", getSQL, id, tenant)
	if t == nil && err == nil {
		err = TaskNotFound(id, tenant)
	}
	return t, err
}

// GetByKey returns the task tenant submitted under submission key key.
func (s *Store) GetByKey(ctx context.Context, tenant, key string) (*agentledger.Task, error) {
	t, err := s.one(ctx, "get task by key", getByKeySQL, tenant, key)
	if t == nil && err == nil {
		err = fmt.Errorf("tenant %q has no task under submission key %q: %w", tenant, key, agentledger.ErrNotFound)
	}
	return t, err
}

// one runs a query selecting at most one task; nil, nil when none.
func (s *Store) one(ctx context.Context, what, sql string, args ...any) (*agentledger.Task, error) {
	rows, err := s.db.Query(ctx, sql, args...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	ts, err := collectTasks(rows)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if len(ts) == 0 {
		return nil, nil
	}
	return ts[0], nil
}

// ListParams filters List. Zero values match everything.
type ListParams struct {
	Tenant string
	Queue  string
	Kind   string
	States []agentledger.TaskState
	// Since and Until bound the creation time: [Since, Until).
	Since, Until time.Time
	Before       int64 // cursor: only ids below this one
	Limit        int   // default 50, at most 1000
}

// filterArgs are the taskFilter parameters of p.
func (p ListParams) filterArgs() ([]any, error) {
	states := make([]string, len(p.States))
	for i, st := range p.States {
		if !st.Valid() {
			return nil, agentledger.Invalid("state", "unknown state %q (one of %v)", st, agentledger.TaskStates)
		}
		states[i] = string(st)
	}
	if !p.Since.IsZero() && !p.Until.IsZero() && !p.Until.After(p.Since) {
		return nil, agentledger.Invalid("until", "%s is not after since %s", p.Until.Format(time.RFC3339), p.Since.Format(time.RFC3339))
	}
	return []any{p.Tenant, p.Queue, p.Kind, states, optTime(p.Since), optTime(p.Until)}, nil
}

func optTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// List returns tasks newest first. Pass the last id as Before for the next
// page.
func (s *Store) List(ctx context.Context, p ListParams) ([]*agentledger.Task, error) {
	if p.Limit <= 0 {
		p.Limit = 50
	}
	if p.Limit > 1000 {
		return nil, agentledger.Invalid("limit", "%d is above 1000", p.Limit)
	}
	args, err := p.filterArgs()
	if err != nil {
		return nil, err
	}
	rows, err := s.db.Query(ctx, listSQL, append(args, p.Before, p.Limit)...)
	if err != nil {
		return nil, fmt.Errorf("list tasks: %w", err)
	}
	tasks, err := collectTasks(rows)
	if err != nil {
		return nil, fmt.Errorf("list tasks: %w", err)
	}
	return tasks, nil
}

// attemptRow is a task_attempts row as scanned.
type attemptRow struct {
	TaskID     int64 `db:"task_id"`
	Attempt    int32
	Generation int32
	LeaseToken int64 `db:"lease_token"`
	Worker     string
	StartedAt  time.Time  `db:"started_at"`
	EndedAt    *time.Time `db:"ended_at"`
	Outcome    string
	Error      string
}

// Attempts returns every attempt of task id, oldest first.
func (s *Store) Attempts(ctx context.Context, id int64) ([]agentledger.Attempt, error) {
	rows, err := s.db.Query(ctx, attemptsSQL, id)
	if err != nil {
		return nil, fmt.Errorf("attempts: %w", err)
	}
	rs, err := pgx.CollectRows(rows, pgx.RowToStructByName[attemptRow])
	if err != nil {
		return nil, fmt.Errorf("attempts: %w", err)
	}
	out := make([]agentledger.Attempt, len(rs))
	for i, r := range rs {
		out[i] = agentledger.Attempt{
			TaskID: r.TaskID, Attempt: r.Attempt, Generation: r.Generation, Token: r.LeaseToken,
			Worker: r.Worker, StartedAt: r.StartedAt, EndedAt: r.EndedAt,
			Outcome: agentledger.AttemptOutcome(r.Outcome), Error: r.Error,
		}
	}
	return out, nil
}

// TaskNotFound is the error for a task id that tenant ("" for any) has no
// task of. It does not say whether another tenant has one.
func TaskNotFound(id int64, tenant string) error {
	if tenant != "" {
		return agentledger.Errorf(agentledger.CodeNotFound, "task %d not found for tenant %q", id, tenant)
	}
	return agentledger.Errorf(agentledger.CodeNotFound, "task %d not found", id)
}

// RunningByTenant returns how many tasks of each tenant are running
// (leased) across the fleet: the figure a tenant's max_running bounds
// (package tenants). Tenants with none are left out.
func (s *Store) RunningByTenant(ctx context.Context) (map[string]int64, error) {
	rows, err := s.db.Query(ctx, runningByTenantSQL)
	if err != nil {
		return nil, fmt.Errorf("running tasks by tenant: %w", err)
	}
	out := map[string]int64{}
	var tenant string
	var n int64
	_, err = pgx.ForEachRow(rows, []any{&tenant, &n}, func() error {
		out[tenant] = n
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("running tasks by tenant: %w", err)
	}
	return out, nil
}

// Sweep is what a claiming loop's poll needs to know before it claims.
type Sweep struct {
	// Expired: a running task of the queue has outlived its lease, for
	// the full claim to take over; without one, the poll claims as a
	// woken loop does, and the full statement is neither planned nor run.
	Expired bool
	// Capped: some tenant has a cap on its running tasks
	// (tenant_shares.max_running). A loop that knows none takes a short
	// claim as "nothing more is due"; with caps, a short claim may be a
	// cap's, which any task's end can lift.
	Capped bool
}

// Probe reads what a poll of queue needs to know, in one statement.
func (s *Store) Probe(ctx context.Context, queue string) (Sweep, error) {
	var sw Sweep
	err := s.db.QueryRow(ctx, `/* claims.probe */ SELECT
		EXISTS (SELECT FROM tasks WHERE queue = $1 AND state = 'running' AND lease_expires_at <= coalesce($2::timestamptz, now())),
		EXISTS (SELECT FROM tenant_shares WHERE max_running IS NOT NULL)`, queue, s.Now.Param()).Scan(&sw.Expired, &sw.Capped)
	if err != nil {
		return Sweep{Expired: true}, fmt.Errorf("probe: %w", err)
	}
	return sw, nil
}
