package tools

import (
	"context"
	"errors"
	"sync"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/grants"
	"github.com/agentledger/agentledger/ledger"
)

// Path is the one way an effect leaves a task: every kind (steps, agent
// tool calls and model completions, Go kinds through saga.Call,
// compensations) performs its effects through Perform, which runs an
// ordered chain of stages built once:
//
//	lookup → trace → grant → effect → flow → Interceptors… → ledger
//
// lookup finds the tool by name (Registry.Get) unless the kind looked it
// up already; trace opens the tool call's span; grant reads the tenant's
// grant in force now (Grants.For, before every effect, so that a revoke
// stops a task in flight) and checks the call against it (Permit); effect
// has the tool build its ledger.Effect; flow admits an effect that names
// its target (ledger.Effect.Target) against the fleet's limits and
// breakers (Gate, through Gated), as the effect's Admit, which the ledger
// asks only when it performs, so a replay served from the ledger books
// nothing; the embedder's Interceptors see the call with its effect built
// and may stop it; ledger runs it through Doer.Do, which counts it
// (ledger.Ledger.Observe) and serves recorded outcomes.
//
// A Path is safe for concurrent use; its fields must not change once
// Perform has been called.
type Path struct {
	Ledger Doer
	// Tools resolves Outgoing.ToolName; nil when every caller sets
	// Outgoing.Tool.
	Tools *Registry
	// Grants, when set, gives each task's tenant grant, read before every
	// effect; nil checks Outgoing.Grant as given (nil: nothing checked).
	Grants grants.Source
	// Gate, when set, admits every effect that names its target (the HTTP
	// and MCP tools, a defined tool with a Spec.Target)
	// against the fleet's limits and circuit breakers: a call that must
	// wait defers its task.
	Gate Gate
	// Interceptors run in order after the effect is built and before the
	// ledger: an audit log, a policy, an approval gate (see Interceptor).
	Interceptors []Interceptor

	once sync.Once
	head Next
}

// Outgoing is one effect on its way out, as the chain's stages and
// interceptors see it. The stages fill it in as it goes: Tool (lookup),
// Grant (grant), Effect (effect).
type Outgoing struct {
	// Call is the tool call: task, step path, resolved arguments, grant,
	// compensation.
	Call
	// ToolName is the tool asked for, looked up when Tool is nil.
	ToolName string
	// Tool is the tool performing the call; nil for an effect that is no
	// tool's call (a model completion), whose Effect the kind builds.
	Tool Tool
	// Effect is what the ledger will run: its Class and Operation tell
	// what kind of effect this is.
	Effect ledger.Effect
	// Allow, for an effect that is no tool's call, checks it against the
	// grant in force (nil when grants are not checked): a model
	// completion's model and token budget.
	Allow func(g *grants.Grant) error

	path *Path
}

// Next runs the rest of the chain.
type Next func(ctx context.Context, o *Outgoing) (ledger.Result, error)

// Interceptor is one stage an embedder adds to the effect path. It sees
// the effect before the ledger does and calls next to let it go on, or
// returns without calling it to stop it: an error from Park parks the
// task for a person (needs_attention), any other error fails the attempt
// as the kind maps it. It runs on every attempt and on every replay of
// the call, so a decision must not be asked twice for an effect the
// ledger will serve from its recorded outcome: Outgoing.Recorded tells.
type Interceptor func(ctx context.Context, o *Outgoing, next Next) (ledger.Result, error)

// Name is the tool's name, or for an effect that is no tool's call its
// operation ("llm.chat").
func (o *Outgoing) Name() string {
	if o.Tool != nil {
		return o.Tool.Name()
	}
	if o.ToolName != "" {
		return o.ToolName
	}
	return o.Effect.Operation
}

// Recorder is a Doer that can tell whether an effect is recorded
// (*ledger.Ledger).
type Recorder interface {
	Recorded(ctx context.Context, a ledger.Attempt, e ledger.Effect) (bool, error)
}

// Recorded reports whether the ledger holds a finished outcome for the
// effect, so that Do would serve it and perform nothing (a replay). Only
// valid once the effect is built, that is, in an Interceptor.
func (o *Outgoing) Recorded(ctx context.Context) (bool, error) {
	r, ok := o.path.Ledger.(Recorder)
	if !ok {
		return false, errors.New("tools: the path's ledger cannot tell recorded effects")
	}
	return r.Recorded(ctx, AttemptOf(o.Task), o.Effect)
}

// Park is the error an Interceptor returns to stop the effect and park
// its task for a person, with reason as the task's last error: the task
// goes to needs_attention (the error is agentledger.ErrNeedsAttention for
// errors.Is, as the worker asks), and nothing is recorded for the effect.
func Park(reason string) error { return &ParkedError{Reason: reason} }

// ParkedError is an effect an interceptor stopped for a person.
type ParkedError struct{ Reason string }

func (e *ParkedError) Error() string { return e.Reason }

// Is makes a parked effect park its task, as an effect of unknown outcome
// does: the worker tests errors.Is(err, agentledger.ErrNeedsAttention).
func (e *ParkedError) Is(target error) bool { return target == agentledger.ErrNeedsAttention }

// Perform runs o through the chain. A kind sets o.Call (task, step path,
// arguments, compensation) and o.Tool or o.ToolName, or o.Effect for an
// effect that is no tool's call.
func (p *Path) Perform(ctx context.Context, o *Outgoing) (ledger.Result, error) {
	p.once.Do(p.build)
	o.path = p
	return p.head(ctx, o)
}

// build links the stages once, each bound to the next, so that a call
// through the chain allocates nothing for its links.
func (p *Path) build() {
	next := p.perform
	for i := len(p.Interceptors) - 1; i >= 0; i-- {
		ic, n := p.Interceptors[i], next
		next = func(ctx context.Context, o *Outgoing) (ledger.Result, error) { return ic(ctx, o, n) }
	}
	for _, stage := range []func(Next) Next{p.flow, p.effect, p.grant, traceStage, p.lookup} {
		next = stage(next)
	}
	p.head = next
}
