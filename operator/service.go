package operator

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/approvals"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/notify/outbox"
	"github.com/agentledger/agentledger/registry"
)

// DB is what the operator service needs of a database: a pool, a connection or a
// transaction (pgx's own types satisfy it).
type DB interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Begin(ctx context.Context) (pgx.Tx, error)
}

// Service is the operator's actions over one database.
type Service struct {
	db       DB
	tasks    *claims.Store
	registry *registry.Store
	ledger   *ledger.Ledger
	outbox   *outbox.Store

	// BulkProgress, when set, is told after each page of a bulk action
	// (RetryAll, CancelAll) how many tasks it has gone through: one task
	// at a time, a bulk action over tens of thousands takes a while.
	BulkProgress func(done int)
}

// New returns the service over db.
func New(db DB) *Service {
	return &Service{db: db, tasks: claims.New(db), registry: registry.New(db), ledger: ledger.New(db), outbox: outbox.NewStore(db)}
}

// Detail is one task with everything an operator reads about it.
type Detail struct {
	Task     *agentledger.Task
	Attempts []agentledger.Attempt
	// Journal is the effects of the task's current generation, in order.
	Journal []Effect
	// Notifications are the task's notification events, oldest first.
	Notifications []Notification
	// Approvals are the task's approval requests, of every generation,
	// with their decisions: part of what happened to it.
	Approvals []approvals.Request
	// Parent is the task that created this one (create_task), nil for
	// none; Children are those this one's current generation created,
	// oldest first (at most MaxChildren): a parent that went on without
	// some leaves them running, for an operator to find.
	Parent   *Relative
	Children []Relative
	// ChildCount is how many children the current generation created,
	// Children's length unless there are more than MaxChildren.
	ChildCount int
	// CompensationRequestedBy is who asked for the task's compensation
	// (compensation "operator"): "operator:alice", "tenant:acme, token
	// ci-deploy (7)"; "" when no one did, or who did is not recorded (a
	// request before migration 00051, or one that named no one).
	CompensationRequestedBy string
}

// Relative is a task's parent or child, as Show names it.
type Relative struct {
	ID    int64                 `json:"id"`
	Kind  string                `json:"kind"`
	State agentledger.TaskState `json:"state"`
}

// MaxChildren bounds the children Show lists.
const MaxChildren = 100

// PinClock makes the service write time c says instead of the database's
// (tests and demos that need stable output).
func (s *Service) PinClock(c agentledger.Clock) { s.tasks.Now, s.registry.Now, s.outbox.Now = c, c, c }

// Show returns task id with its attempts, journal and notifications.
func (s *Service) Show(ctx context.Context, tenant string, id int64) (*Detail, error) {
	t, journal, err := s.load(ctx, tenant, id)
	if err != nil {
		return nil, err
	}
	d := &Detail{Task: t, Journal: effectsOf(journal)}
	if err := s.registry.ExplainWaits(ctx, t); err != nil {
		return nil, err
	}
	if d.Attempts, err = s.tasks.Attempts(ctx, id); err != nil {
		return nil, err
	}
	events, err := s.outbox.ForTask(ctx, t.Tenant, id)
	if err != nil {
		return nil, err
	}
	d.Notifications = notificationsOf(events)
	if d.Approvals, err = approvals.NewStore(s.db).List(ctx, approvals.ListParams{TaskID: id, States: ApprovalStates}); err != nil {
		return nil, err
	}
	if d.Parent, d.Children, d.ChildCount, err = s.family(ctx, t); err != nil {
		return nil, err
	}
	if t.Compensation != "" {
		if d.CompensationRequestedBy, err = s.CompensationRequester(ctx, t.Tenant, id); err != nil {
			return nil, err
		}
	}
	return d, nil
}

// CompensationRequester returns who asked for task id's compensation
// (CompensateBy; restricted to tenant unless empty): "" when no one did,
// or who did is not recorded. It is kept until a re-run clears the
// compensation.
func (s *Service) CompensationRequester(ctx context.Context, tenant string, id int64) (string, error) {
	var by *string
	err := s.db.QueryRow(ctx, `/* operator.compensation_requester */ SELECT compensation_requested_by FROM tasks
		WHERE id = $1 AND ($2 = '' OR tenant = $2)`, id, tenant).Scan(&by)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", claims.TaskNotFound(id, tenant)
	}
	if err != nil {
		return "", fmt.Errorf("who asked for task %d's compensation: %w", id, err)
	}
	if by == nil {
		return "", nil
	}
	return *by, nil
}

// family reads t's parent and the children of its current generation
// (the first MaxChildren), and how many children it has.
func (s *Service) family(ctx context.Context, t *agentledger.Task) (*Relative, []Relative, int, error) {
	rows, err := s.db.Query(ctx, `/* operator.family */
(SELECT p.id, p.kind, p.state, true, 0::bigint FROM tasks c JOIN tasks p ON p.id = c.parent_id WHERE c.id = $1)
UNION ALL
(SELECT id, kind, state, false, count(*) OVER () FROM tasks WHERE parent_id = $1 AND parent_generation = $2 ORDER BY id LIMIT $3)`,
		t.ID, t.Generation, MaxChildren)
	if err != nil {
		return nil, nil, 0, fmt.Errorf("task %d's parent and children: %w", t.ID, err)
	}
	defer rows.Close()
	var parent *Relative
	var children []Relative
	var count int64
	for rows.Next() {
		var r Relative
		var isParent bool
		var n int64
		if err := rows.Scan(&r.ID, &r.Kind, &r.State, &isParent, &n); err != nil {
			return nil, nil, 0, err
		}
		if isParent {
			parent = &r
		} else {
			children, count = append(children, r), n
		}
	}
	return parent, children, int(count), rows.Err()
}

// Journal returns task id and the effects of its current generation, in
// the order they were intended; a compensation says what it undoes.
func (s *Service) Journal(ctx context.Context, tenant string, id int64) (*agentledger.Task, []Effect, error) {
	t, journal, err := s.load(ctx, tenant, id)
	if err != nil {
		return nil, nil, err
	}
	return t, effectsOf(journal), nil
}

// load reads task id and the journal of its current generation.
func (s *Service) load(ctx context.Context, tenant string, id int64) (*agentledger.Task, []ledger.Entry, error) {
	t, err := s.tasks.Get(ctx, tenant, id)
	if err != nil {
		return nil, nil, err
	}
	j, err := s.ledger.Journal(ctx, id, t.Generation)
	if err != nil {
		return nil, nil, err
	}
	return t, j, nil
}

// ListParams filter List, Count and the bulk actions.
type ListParams = claims.ListParams

// List returns the tasks of the filter, newest first (a page of them),
// each waiting one saying why (registry.ExplainWaits).
func (s *Service) List(ctx context.Context, p ListParams) ([]*agentledger.Task, error) {
	ts, err := s.tasks.List(ctx, p)
	if err != nil {
		return nil, err
	}
	return ts, s.registry.ExplainWaits(ctx, ts...)
}

// Count returns how many tasks of the filter are in each state.
func (s *Service) Count(ctx context.Context, p ListParams) (map[agentledger.TaskState]int64, error) {
	return s.tasks.Count(ctx, p)
}

// Worker is one worker pool: announced, holding leases, or both.
type Worker = registry.Worker

// Workers lists the worker pools that announced themselves lately and the
// holders of live leases.
func (s *Service) Workers(ctx context.Context) ([]Worker, error) { return s.registry.Workers(ctx) }
