package waits

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/agentledger/agentledger"
)

// ChildrenSpec is what a children wait waits for.
type ChildrenSpec struct {
	// Mode is "all" (every child finished) or "any" (the first child
	// that succeeds; or every child finished when none did).
	Mode string `json:"mode"`
	// OnFailure is what a child that did not succeed does: "fail" fails
	// the waiting call as soon as one fails; "return" hands it to the
	// caller in the result, beside the others.
	OnFailure string `json:"on_failure"`
	// Tasks, when set, are the children waited for; empty waits for
	// every child the task started in its generation.
	Tasks []int64 `json:"tasks,omitempty"`
}

// Child is one child's end, in a children wait's result.
type Child struct {
	TaskID int64           `json:"task_id"`
	Kind   string          `json:"kind"`
	State  string          `json:"state"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  string          `json:"error,omitempty"`
}

// ChildrenResult is a children wait's result.
type ChildrenResult struct {
	// First is the child that ended an "any" wait by succeeding.
	First    *int64  `json:"first,omitempty"`
	Children []Child `json:"children"`
}

// finished are the states a child ends in.
var finished = []string{string(agentledger.StateSucceeded), string(agentledger.StateDead),
	string(agentledger.StateCancelled), string(agentledger.StateCompensated)}

// childrenSQL reads a task's generation's children, or those of them
// listed in $3.
const childrenSQL = `/* waits.children */
SELECT id, kind, state, result, coalesce(last_error, '') FROM tasks
WHERE parent_id = $1 AND parent_generation = $2 AND (cardinality($3::bigint[]) = 0 OR id = ANY ($3))
ORDER BY id`

func (s *Store) readChildren(ctx context.Context, task int64, generation int32, ids []int64) ([]Child, error) {
	if ids == nil {
		ids = []int64{}
	}
	rows, err := s.db.Query(ctx, childrenSQL, task, generation, ids)
	if err != nil {
		return nil, fmt.Errorf("children of task %d: %w", task, err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (Child, error) {
		var c Child
		err := r.Scan(&c.TaskID, &c.Kind, &c.State, &c.Result, &c.Error)
		if c.State == string(agentledger.StateSucceeded) {
			c.Error = ""
		}
		return c, err
	})
}

// CheckChildren checks that spec's tasks are children of the task's
// generation, and that it has children at all: a wait for a child that
// does not exist is refused before it is recorded.
func (s *Store) CheckChildren(ctx context.Context, task int64, generation int32, spec ChildrenSpec) error {
	got, err := s.readChildren(ctx, task, generation, spec.Tasks)
	if err != nil {
		return err
	}
	if len(spec.Tasks) == 0 {
		if len(got) == 0 {
			return agentledger.Invalid("tasks", "task %d has started no child task to wait for (create_task starts one)", task)
		}
		return nil
	}
	for _, id := range spec.Tasks {
		if !slices.ContainsFunc(got, func(c Child) bool { return c.TaskID == id }) {
			return agentledger.Invalid("tasks", "task %d is not a child of task %d (generation %d)", id, task, generation)
		}
	}
	return nil
}

// children reads w's children and says whether they end it, with its
// result.
func (s *Store) children(ctx context.Context, w Wait) (json.RawMessage, bool, error) {
	var spec ChildrenSpec
	if err := json.Unmarshal(w.Spec, &spec); err != nil {
		return nil, false, fmt.Errorf("wait %d: its spec: %w", w.ID, err)
	}
	got, err := s.readChildren(ctx, w.TaskID, w.Generation, spec.Tasks)
	if err != nil {
		return nil, false, err
	}
	res := ChildrenResult{Children: got}
	// all: every child ended, or (on_failure fail) the first failure;
	// any: the first success, or every child ended without one.
	allEnded, failed := len(got) > 0, false
	for _, c := range got {
		ok := c.State == string(agentledger.StateSucceeded)
		if spec.Mode == "any" && ok && res.First == nil {
			id := c.TaskID
			res.First = &id
		}
		if !slices.Contains(finished, c.State) {
			allEnded = false
		} else if !ok {
			failed = true
		}
	}
	done := allEnded || res.First != nil || (spec.Mode != "any" && failed && spec.OnFailure == "fail")
	if !done {
		return nil, false, nil
	}
	b, err := json.Marshal(res)
	return b, true, err
}

// Failed is the first child of a done children result that did not
// succeed, if any.
func Failed(result json.RawMessage) (Child, bool) {
	var r ChildrenResult
	if json.Unmarshal(result, &r) != nil || r.First != nil {
		return Child{}, false
	}
	for _, c := range r.Children {
		if c.State != string(agentledger.StateSucceeded) {
			return c, true
		}
	}
	return Child{}, false
}
