package operator

import (
	"cmp"
	"context"
	"encoding/json"
	"math"
	"slices"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/saga"
)

// Compensable reports whether a task in state may be compensated.
func Compensable(state agentledger.TaskState) bool {
	return slices.Contains(CompensableStates, state)
}

// Undo is one completed effect a compensation would undo, and the call
// that undoes it.
type Undo struct {
	// Step is the effect's journal path (tool/<i>, call/<path>, …),
	// Operation what it did.
	Step      string `json:"step"`
	Operation string `json:"operation"`
	// Tool is the compensation's tool; it is recorded at compensate/<Step>.
	Tool string `json:"tool"`
	// Args is the compensation's arguments with the effect's result
	// filled in: the call the compensation sends. They are the declared
	// ones, ${self…} unresolved, when the result lacks what they name.
	Args json.RawMessage `json:"args,omitempty"`
	// State is the effect's ledger state: completed, or of unknown outcome
	// (the compensation then parks the task until it is resolved).
	State       ledger.State    `json:"state"`
	Result      json.RawMessage `json:"result,omitempty"`
	ExternalRef string          `json:"external_ref,omitempty"`
}

// UndoPlan is what a compensation of a task would undo, newest completion
// first (the order the compensation phase runs in).
type UndoPlan struct {
	Task  *agentledger.Task
	Undos []Undo
}

// PlanCompensation says what a compensation of task id would undo, and
// changes nothing: the effects that declared a compensation and did not
// fail (one of unknown outcome parks the compensation until resolved).
func (s *Service) PlanCompensation(ctx context.Context, tenant string, id int64) (*UndoPlan, error) {
	t, j, err := s.load(ctx, tenant, id)
	if err != nil {
		return nil, err
	}
	if err := notCompensable(t); err != nil {
		return nil, err
	}
	return &UndoPlan{Task: t, Undos: undos(j)}, nil
}

// notCompensable is the conflict of compensating t in its state, worded
// as Compensate words it; nil when its state allows it.
func notCompensable(t *agentledger.Task) error {
	switch {
	case t.State == agentledger.StateCompensated:
		return agentledger.Errorf(agentledger.CodeConflict, "task %d is already compensated", t.ID)
	case t.State == agentledger.StateCompensating || t.Compensation != "":
		return agentledger.Errorf(agentledger.CodeConflict, "task %d is already undoing its effects (%s); "+
			"replay it to continue a parked compensation", t.ID, t.State)
	case Compensable(t.State):
		return nil
	}
	return agentledger.Errorf(agentledger.CodeConflict, "task %d is %s; only a %s task can be compensated",
		t.ID, t.State, agentledger.OneOf(CompensableStates))
}

// undos lists the effects of journal that t's compensation would undo:
// those that declared a compensation (on their ledger row, whatever the
// task's kind) and did not fail.
func undos(journal []ledger.Entry) []Undo {
	type dated struct {
		Undo
		at int64
	}
	var out []dated
	for _, e := range journal {
		var c saga.Compensation
		if !saga.ToUndo(e) || json.Unmarshal(e.Compensate, &c) != nil {
			continue
		}
		args, err := c.ArgsFor(e)
		if err != nil {
			args = c.Args
		}
		d := dated{Undo: Undo{Step: e.StepPath, Operation: e.Operation, Tool: c.Tool, Args: args,
			State: e.State, Result: e.Result.Body, ExternalRef: e.Result.ExternalRef}}
		switch {
		case e.CompletedAt != nil:
			d.at = e.CompletedAt.UnixNano()
		default:
			// Of unknown outcome: in flight when the task stopped, after
			// every completion, so newest (and the phase parks on it first).
			d.at = math.MaxInt64
		}
		out = append(out, d)
	}
	// Newest completion first, as the compensation phase runs them; the
	// journal's order breaks ties.
	slices.SortStableFunc(out, func(a, b dated) int { return -cmp.Compare(a.at, b.at) })
	res := make([]Undo, len(out))
	for i, d := range out {
		res[i] = d.Undo
	}
	return res
}
