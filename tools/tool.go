package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/grants"
	"github.com/agentledger/agentledger/ledger"
)

// Call is one invocation of a tool by a task.
type Call struct {
	Task *agentledger.Task
	// StepPath is the call's place in the task's journal: "tool/<i>" for
	// step i of a steps task, "tool/<n>/<tool_call_id>" for an agent.
	StepPath string
	Args     json.RawMessage
	// Grant is what the task's tenant may reach; nil checks nothing (the
	// steps and agent kinds always set it).
	Grant *grants.Grant
	// Compensate is the call that undoes this one (package saga), kept
	// with its effect (ledger.Effect.Compensate); a pure effect may not
	// declare one.
	Compensate json.RawMessage
	// Approval, when set, is a gate a person must open before the call is
	// performed (the step's "approve", an agent tool's); the gate
	// interceptor asks and waits.
	Approval *Approval
	// Reason is why the call is made, in the caller's words (the model's
	// text beside its tool call), shown to whoever decides.
	Reason string
}

// Tool is one capability steps and agents can invoke.
type Tool interface {
	// Name is how steps and models refer to the tool: [a-zA-Z0-9_-]{1,64}.
	Name() string
	// Description tells the model what the tool does.
	Description() string
	// Parameters is the JSON Schema of the arguments object.
	Parameters() json.RawMessage
	// Effect validates the call's arguments and returns the effect to run
	// through the ledger. Bad arguments are agentledger.Permanent errors.
	Effect(call Call) (ledger.Effect, error)
}

// Doer runs effects through the ledger (*ledger.Ledger).
type Doer interface {
	Do(ctx context.Context, a ledger.Attempt, e ledger.Effect) (ledger.Result, error)
}

// Reacher is a tool whose calls reach more than the tool itself: a host, a
// channel, a kind of task. Reach reads it from the call's arguments.
type Reacher interface {
	Reach(call Call) (grants.Need, error)
}

// Permit checks call of t against call.Grant: the tool, and what the call
// reaches. A denial is a *grants.DeniedError (permanent).
func Permit(t Tool, call Call) error {
	if call.Grant == nil {
		return nil
	}
	var need grants.Need
	if r, ok := t.(Reacher); ok {
		var err error
		if need, err = r.Reach(call); err != nil {
			return err
		}
	}
	need.Tool = t.Name()
	tenant := ""
	if call.Task != nil {
		tenant = call.Task.Tenant
	}
	if err := call.Grant.Allow(tenant, need); err != nil {
		return err
	}
	// The payload's approval gate posts its request where it says: the
	// tenant's channels bound it as they bound notify.
	if a := call.Approval; a != nil && a.Channel != "" {
		if err := call.Grant.Allow(tenant, grants.Need{Channel: a.Channel}); err != nil {
			return fmt.Errorf("its approval: %w", err)
		}
	}
	return nil
}

// Invoke runs call of tool t through the ledger for the task's attempt,
// once call.Grant allows it: a call outside the grant records and
// performs nothing, on a replay too. It is a Path of its own, without
// grants source or interceptors, for one call; the kinds share their
// daemon's Path.
func Invoke(ctx context.Context, l Doer, t Tool, call Call) (ledger.Result, error) {
	return (&Path{Ledger: l}).Perform(ctx, &Outgoing{Call: call, Tool: t})
}

// CheckCompensable refuses, as a permanent error, a compensation declared
// for a pure effect: it changed nothing, so there is nothing to undo; and
// a compensation that is a pure effect itself: it would undo nothing, and
// the task would end compensated with its effect in place.
func CheckCompensable(t Tool, call Call, eff ledger.Effect) error {
	switch {
	case eff.Class != ledger.Pure:
		return nil
	case call.Compensate != nil:
		return agentledger.Permanent(fmt.Errorf("%s at %s is a pure effect (it changes nothing), so it has nothing to undo: "+
			"remove its compensation", t.Name(), call.StepPath))
	case strings.HasPrefix(call.StepPath, ledger.CompensationPrefix):
		return agentledger.Permanent(fmt.Errorf("%s at %s is a pure effect (it changes nothing), so it undoes nothing: "+
			"a compensation must call a tool that does", t.Name(), call.StepPath))
	}
	return nil
}

// Registry maps tool names to tools. It is safe for concurrent use.
type Registry struct {
	mu          sync.RWMutex
	tools       map[string]Tool
	unavailable map[string]func() string // by name prefix
}

// NewRegistry returns a registry holding tools.
func NewRegistry(tools ...Tool) *Registry {
	r := &Registry{tools: map[string]Tool{}}
	for _, t := range tools {
		r.Register(t)
	}
	return r
}

// Register adds t, replacing a tool of the same name.
func (r *Registry) Register(t Tool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.tools[t.Name()] = t
}

// Get returns the tool called name, or an error naming the known tools
// (permanent: retrying will not make it appear). A name under a prefix
// marked unavailable (an MCP server not connected yet) reports why, as a
// transient error: the attempt is retried after unavailableRetry, and the
// task fails for good only once its attempts are used up.
func (r *Registry) Get(name string) (Tool, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if t, ok := r.tools[name]; ok {
		return t, nil
	}
	for prefix, why := range r.unavailable {
		if !strings.HasPrefix(name, prefix) {
			continue
		}
		// "" is a server connected: a tool it does not offer is unknown.
		if reason := why(); reason != "" {
			return nil, agentledger.RetryAfter(fmt.Errorf("tool %q: %s", name, reason), unavailableRetry)
		}
	}
	return nil, UnknownTool(name, r.namesLocked())
}

// UnknownTool is the error for a tool name that is not among known: what
// a steps task meets when it runs, and its submission when no live worker
// serves the tool.
func UnknownTool(name string, known []string) error {
	if len(known) == 0 {
		return agentledger.Permanent(fmt.Errorf("unknown tool %q (no tools are known)", name))
	}
	return agentledger.Permanent(fmt.Errorf("unknown tool %q (known: %s)", name, strings.Join(known, ", ")))
}

// Names lists the registered tools' names, sorted: what a worker pool
// announces (tools of MCP servers that are not connected are not among
// them).
func (r *Registry) Names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.namesLocked()
}

// Schemas are the registered tools' parameter schemas by name: what a
// worker pool announces, so that a submitted steps task's arguments are
// checked against them.
func (r *Registry) Schemas() map[string]json.RawMessage {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make(map[string]json.RawMessage, len(r.tools))
	for name, t := range r.tools {
		out[name] = t.Parameters()
	}
	return out
}

// Classed is a tool whose effect class does not depend on its arguments
// (a tool declared with Define, an MCP tool). The HTTP tools are not: a
// GET is pure, other methods are not.
type Classed interface {
	Class() ledger.Class
}

// IsPure says whether t declared its effect pure (a Classed tool whose
// class is ledger.Pure): its call changes nothing, so it undoes nothing.
func IsPure(t Tool) bool {
	c, ok := t.(Classed)
	return ok && c.Class() == ledger.Pure
}

// Pure says whether the tool registered as name declared its effect pure
// (IsPure); false for a name not registered.
func (r *Registry) Pure(name string) bool {
	t, err := r.Get(name)
	return err == nil && IsPure(t)
}

// Classes returns the class of each Classed tool by name: what a worker
// announces, so that a submit can be refused a compensation of a pure
// tool's call.
func (r *Registry) Classes() map[string]string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := map[string]string{}
	for name, t := range r.tools {
		if c, ok := t.(Classed); ok {
			out[name] = string(c.Class())
		}
	}
	return out
}

// unavailableRetry is how soon a task whose tool is unavailable is tried
// again.
const unavailableRetry = 2 * time.Second

// Unavailable marks the tools named prefix… as unavailable (an MCP server
// that is not connected): Get of an unknown tool under it answers why(),
// to be tried again, while why answers anything but "" (the server is
// connected: a tool it does not offer is unknown, for good); nil why
// clears the mark.
func (r *Registry) Unavailable(prefix string, why func() string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if why == nil {
		delete(r.unavailable, prefix)
		return
	}
	if r.unavailable == nil {
		r.unavailable = map[string]func() string{}
	}
	r.unavailable[prefix] = why
}

// Remove drops the tools whose names start with prefix (a server that was
// reconnected registers its current tools again).
func (r *Registry) Remove(prefix string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for name := range r.tools {
		if strings.HasPrefix(name, prefix) {
			delete(r.tools, name)
		}
	}
}

// Allowed returns the tools named in names, in that order; every name must
// exist. An empty list allows every tool, sorted by name.
func (r *Registry) Allowed(names []string) ([]Tool, error) {
	if len(names) == 0 {
		r.mu.RLock()
		all := r.namesLocked()
		r.mu.RUnlock()
		names = all
	}
	out := make([]Tool, 0, len(names))
	for _, n := range names {
		t, err := r.Get(n)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

func (r *Registry) namesLocked() []string {
	names := make([]string, 0, len(r.tools))
	for n := range r.tools {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// AttemptOf is the ledger's Attempt of a claimed task: its effects are
// fenced on the task's lease.
func AttemptOf(t *agentledger.Task) ledger.Attempt {
	return ledger.Attempt{Tenant: t.Tenant, TaskID: t.ID, Generation: t.Generation,
		Fence: claims.LeaseFence(claims.LeaseOf(t)), First: t.FirstClaim()}
}
