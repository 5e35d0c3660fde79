package admit

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/agent"
	"github.com/agentledger/agentledger/argschema"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/grants"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/registry"
	"github.com/agentledger/agentledger/steps"
	"github.com/agentledger/agentledger/tools"
)

// options tune check.
type options struct {
	// Unreached queues a steps task whose literal URL no live daemon's
	// allow-list has: the submitter asked (Submission.Unserved).
	Unreached bool
	// Anyway queues a task no live worker serves, for a worker that is
	// not up yet: its kind, queue and tools are not checked.
	Anyway bool
	// Override says how the submitter asks for Anyway ("submit with
	// --allow-unserved"); a refusal ends with it.
	Override string
	// Model is the daemon's configured model, taken to be its workers'
	// (one configuration for the fleet; each completion is checked again
	// on its worker): "*" grants it, and a payload that names no model
	// asks it. "" when the daemon has none: the workers' is not known,
	// and only a model no configured one could make granted is refused
	// (agent.ModelDenied).
	Model string
	// Reach is Door.Reach.
	Reach func(tool string, u *url.URL) error
	// Pure is Door.Pure.
	Pure steps.PureCheck
	// Args is Door.Args.
	Args func(tool string, args json.RawMessage) error
	// Anonymous names no worker in a refusal: the submitter is a tenant,
	// to whom the fleet's hosts and pids are the operator's business.
	Anonymous bool
}

// check checks the validated task p for the door. Its errors are
// *agentledger.InvalidError naming the field at fault: kind (no live
// worker serves it; the message lists the kinds served), queue (the kind
// is served on other queues only), or payload (a steps payload that would
// fail when it runs); or, with g (the tenant's grant), a
// *grants.DeniedError for what the payload names outside it.
func check(ctx context.Context, s *registry.Store, p claims.EnqueueParams, g *grants.Grant, o options) error {
	// A steps payload's structure first, which needs no worker; then the
	// grant, so that a tenant is told what it lacks before anything of the
	// daemon's own configuration (its HTTP tools' allow-lists); its calls
	// last, against the schemas of the live pools when there are any, so
	// that a refusal names the field of the schema (rather than the tool's
	// own check, which steps.Check makes too).
	if p.Kind == steps.Kind {
		if err := steps.Check(p.Payload, nil); err != nil {
			return err
		}
	}
	if g != nil {
		if err := granted(g, p, o.Model); err != nil {
			if uerr := unknownTools(ctx, s, p, g, o); uerr != nil {
				return uerr
			}
			return err
		}
	}
	// An origin no live daemon's allow-list has may be a daemon's that is
	// not up yet: a submitter who asks for it queues it, as a kind none
	// serves (its step is held to the allow-list of the daemon that runs
	// it).
	if p.Kind == steps.Kind && !o.Unreached {
		if err := reachable(p.Payload, fleetReach(ctx, s, o.Reach)); err != nil {
			return advise(err, o.Override)
		}
	}
	// The tool's own checks of literal arguments (o.Args), after their
	// schema's, whose message names the argument.
	own := func(tool string, args json.RawMessage) error {
		if args == nil || o.Args == nil { // args refer to earlier results: checked when it runs
			return nil
		}
		return o.Args(tool, args)
	}
	calls := func() error { // with no schema known
		if p.Kind != steps.Kind {
			return nil
		}
		return steps.CheckWith(p.Payload, own, o.Pure)
	}
	if o.Anyway {
		return calls()
	}
	live, err := s.LiveWorkers(ctx)
	if err != nil {
		return err
	}
	servers, err := serving(live, p.Queue, p.Kind)
	if err != nil {
		return advise(err, o.Override)
	}
	if p.Kind == agent.Kind {
		if err := agentTools(p, toolCheck(servers, g, p.Tenant)); err != nil {
			return advise(err, o.Override)
		}
		if err := agentSteps(p.Payload, servers, o.Anonymous); err != nil {
			return advise(err, o.Override)
		}
	}
	if p.Kind != steps.Kind {
		return advise(runnable(p.Needs, servers, o.Anonymous), o.Override)
	}
	ran := func() error { // and its literal children
		if err := runnable(p.Needs, servers, o.Anonymous); err != nil {
			return advise(err, o.Override)
		}
		return advise(childrenServed(live, p, 0, o.Anonymous), o.Override)
	}
	known := toolCheck(servers, g, p.Tenant)
	if known == nil {
		return calls()
	}
	var named []string // whose schemas to read: a few more than the calls with known arguments
	for _, n := range steps.Needs(p.Payload) {
		named = append(named, n.Tool)
	}
	fit, err := argsCheck(ctx, s, servers, named)
	if err != nil {
		return err
	}
	unknown := false // a tool no live server has: maybe one not up yet's
	if err := steps.CheckWith(p.Payload, func(tool string, args json.RawMessage) error {
		if err := known(tool); err != nil {
			unknown = true
			return err
		}
		if args == nil {
			return nil
		}
		if err := fit(tool, args); err != nil {
			return err
		}
		return own(tool, args)
	}, pureCheck(servers)); err != nil {
		if unknown {
			return advise(err, o.Override)
		}
		return err
	}
	return ran()
}

// childrenServed refuses a steps task whose create_task calls name a child
// (its kind, queue and payload literally) that no live worker could run,
// down to maxChildDepth generations, as the task itself would be refused:
// queued, the child would wait for such a worker, and a parent waiting for
// it with it. What only the run knows is not checked.
func childrenServed(live []registry.Worker, p claims.EnqueueParams, depth int, anonymous bool) error {
	if p.Kind != steps.Kind || depth >= maxChildDepth {
		return nil
	}
	for _, n := range steps.Needs(p.Payload) {
		if n.Child == nil || !n.ChildQueueKnown {
			continue
		}
		c := claims.EnqueueParams{Tenant: p.Tenant, Kind: n.Kind, Queue: n.ChildQueue, Payload: n.Child}
		if c.Queue == "" {
			c.Queue = claims.DefaultQueue
		}
		c.Needs = needsOf(c)
		servers, err := serving(live, c.Queue, c.Kind)
		if err == nil {
			err = runnableAs("it", c.Needs, servers, anonymous)
		}
		if err == nil {
			err = childrenServed(live, c, depth+1, anonymous)
		}
		var ie *agentledger.InvalidError
		switch {
		case err == nil:
		case errors.As(err, &ie):
			return agentledger.Invalid("payload", "%s's child: %s", n.Subject, ie.Problem)
		default:
			return err
		}
	}
	return nil
}

// unknownTools is the refusal of a steps or agent payload naming a tool
// that no live worker serving it has, read when the grant refused the
// payload: a misspelt tool is told as one, not as a grant to add (which
// would not make it exist), naming the known tools the grant allows
// (toolCheck). Nil when every tool is known, when the tools cannot be
// known (no live server, one of an older version, a disconnected MCP
// server), or when the submitter queues it anyway.
func unknownTools(ctx context.Context, s *registry.Store, p claims.EnqueueParams, g *grants.Grant, o options) error {
	if (p.Kind != steps.Kind && p.Kind != agent.Kind) || o.Anyway {
		return nil
	}
	live, err := s.LiveWorkers(ctx)
	if err != nil {
		return nil // the grant's refusal stands
	}
	servers, err := serving(live, p.Queue, p.Kind)
	if err != nil {
		return nil
	}
	known := toolCheck(servers, g, p.Tenant)
	if known == nil {
		return nil
	}
	if p.Kind == agent.Kind {
		return advise(agentTools(p, known), o.Override)
	}
	unknown := false
	err = steps.CheckWith(p.Payload, func(tool string, _ json.RawMessage) error {
		if err := known(tool); err != nil {
			unknown = true
			return err
		}
		return nil
	}, nil)
	if err != nil && unknown {
		return advise(err, o.Override)
	}
	return nil
}

// agentTools checks the tools an agent payload lists (and its
// compensations' tools) with known (toolCheck; nil checks nothing): a
// tool no live worker has would fail the task at its first step, and an
// MCP server's tool is known once its server is connected.
func agentTools(p claims.EnqueueParams, known func(string) error) error {
	if known == nil {
		return nil
	}
	for _, n := range agent.Needs(p.Payload, "") {
		if n.Tool == "" {
			continue
		}
		if err := known(n.Tool); err != nil {
			return agentledger.Invalid("payload", "%s: %s", n.Field, strings.TrimPrefix(err.Error(), "tools: "))
		}
	}
	return nil
}

// agentSteps refuses an agent payload whose max_steps is above the limit
// some live worker serving it with a model endpoint announced
// (registry.AgentMaxSteps): the limit is not a need, so that worker may
// claim the task, and it would fail it. Nil when every such worker allows
// it; a worker that announced no limit (an older version) is not known to
// refuse.
func agentSteps(payload json.RawMessage, servers []registry.Worker, anonymous bool) error {
	asked, ok := agent.RequestedSteps(payload)
	if !ok {
		return nil
	}
	var lower []string
	for _, w := range servers {
		if n, ok := registry.AgentMaxSteps(w.Caps); ok && slices.Contains(w.Caps, registry.CapModel) && asked > n {
			who := w.ID
			if anonymous {
				who = "a worker"
			}
			lower = append(lower, fmt.Sprintf("%s allows %d", who, n))
		}
	}
	if len(lower) == 0 {
		return nil
	}
	slices.Sort(lower)
	lower = slices.Compact(lower)
	return agentledger.Invalid("payload", "max_steps %d is above what a live worker allows (%s; agentd --llm-max-steps), "+
		"which would fail the task if it claimed it", asked, strings.Join(lower, ", "))
}

// reachable checks the literal URLs of a steps payload's calls with
// reach, naming the step of the first it refuses.
func reachable(payload json.RawMessage, reach func(tool string, u *url.URL) error) error {
	if reach == nil {
		return nil
	}
	for _, n := range steps.Needs(payload) {
		if n.URL == nil {
			continue
		}
		if err := reach(n.Tool, n.URL); err != nil {
			return agentledger.Invalid("payload", "%s: %s: %v", n.Subject, n.Tool, err)
		}
	}
	return nil
}

// fleetReach is reach (this process's HTTP tools' allow-lists) for a
// fleet whose daemons may differ: an origin this process's tool refuses
// is still reachable when a live pool announced it for that tool (a
// mixed fleet: claims take the task to that pool, as they do a task
// needing a tool only some pools have). The registry is read only then.
func fleetReach(ctx context.Context, s *registry.Store, reach func(tool string, u *url.URL) error) func(tool string, u *url.URL) error {
	if reach == nil {
		return nil
	}
	var live []registry.Worker
	read := false
	return func(tool string, u *url.URL) error {
		err := reach(tool, u)
		if err == nil {
			return nil
		}
		if !read {
			read = true
			if live, _ = s.LiveWorkers(ctx); live == nil {
				return err // none known, or the registry unread: this process's word
			}
		}
		want := registry.CapOrigin(tool, grants.Origin(u))
		for _, w := range live {
			if slices.Contains(w.Caps, want) {
				return nil
			}
		}
		return err
	}
}

// pureCheck says a tool is pure when every server that announced its
// class announced pure (an MCP tool marked read-only, a Go tool declared
// pure).
func pureCheck(servers []registry.Worker) steps.PureCheck {
	return func(tool string) bool {
		seen := false
		for _, w := range servers {
			switch c, ok := w.ToolClasses[tool]; {
			case !ok:
			case c != string(ledger.Pure):
				return false
			default:
				seen = true
			}
		}
		return seen
	}
}

// serving returns the live pools that claim kind on queue, or the error
// saying why there are none.
func serving(live []registry.Worker, queue, kind string) ([]registry.Worker, error) {
	var servers, ofKind []registry.Worker
	var kinds []string
	for _, w := range live {
		kinds = append(kinds, w.Kinds...)
		if slices.Contains(w.Kinds, kind) {
			ofKind = append(ofKind, w)
			if slices.Contains(w.Queues, queue) {
				servers = append(servers, w)
			}
		}
	}
	switch {
	case len(servers) > 0:
		return servers, nil
	case len(live) == 0:
		return nil, agentledger.Invalid("kind", "no live worker serves %q: no worker pool announced itself in the last %s",
			kind, strings.TrimSuffix(registry.LiveWithin.String(), "0s"))
	case len(ofKind) == 0:
		return nil, agentledger.Invalid("kind", "no live worker serves %q; the live workers serve %s", kind, list(kinds))
	}
	var queues []string
	for _, w := range ofKind {
		queues = append(queues, w.Queues...)
	}
	return nil, agentledger.Invalid("queue", "no live worker serves kind %q on queue %q; it is served on %s", kind, queue, list(queues))
}

// toolCheck returns the check of a tool name against the tools servers
// announced: known if one of them has it, or if it belongs to an MCP
// server of one that is not connected (its tools are not known yet). It
// is nil when a server did not announce its tools (an older version). The
// refusal of an unknown tool names the tools known that the grant g of
// tenant allows (all of them without a grant): a tenant is not told of
// tools outside its grant.
func toolCheck(servers []registry.Worker, g *grants.Grant, tenant string) func(name string) error {
	var known []string
	for _, w := range servers {
		if len(w.Tools) == 0 {
			return nil
		}
		known = append(known, w.Tools...)
	}
	known = sortedSet(known)
	return func(name string) error {
		if _, found := slices.BinarySearch(known, name); found {
			return nil
		}
		if server, _, ok := strings.Cut(name, "/"); ok {
			for _, w := range servers {
				if state, ok := w.MCPServers[server]; ok && state != "connected" {
					return nil
				}
			}
		}
		shown := known // read only for a refusal: most submissions name known tools
		if g != nil {
			shown = slices.DeleteFunc(slices.Clone(known), func(name string) bool { return g.Allow(tenant, grants.Need{Tool: name}) != nil })
		}
		if len(shown) == 0 && g != nil {
			return agentledger.Permanent(fmt.Errorf("unknown tool %q (no tool the grant allows is known to the live workers)", name))
		}
		return tools.UnknownTool(name, shown)
	}
}

// argsCheck returns the check of a step's arguments against the schemas
// of its tool that servers announced: the arguments pass if they fit one
// of them (the pool that claims the task calls the tool with its own), or
// if a server that has the tool announced no schema for it (an older
// version) or one that cannot be read. It reads the schemas of the tools
// named.
func argsCheck(ctx context.Context, s *registry.Store, servers []registry.Worker, named []string) (func(tool string, args json.RawMessage) error, error) {
	if len(named) == 0 {
		return func(string, json.RawMessage) error { return nil }, nil
	}
	ids := make([]string, len(servers))
	for i, w := range servers {
		ids[i] = w.ID
	}
	schemas, err := s.ToolSchemas(ctx, ids, sortedSet(named))
	if err != nil {
		return nil, err
	}
	parsed := map[string]*argschema.Schema{} // by document: most pools announce the same
	return func(tool string, args json.RawMessage) error {
		var refusal error
		for _, w := range servers {
			if !slices.Contains(w.Tools, tool) {
				continue
			}
			doc, ok := schemas[w.ID][tool]
			if !ok {
				return nil
			}
			sc, ok := parsed[string(doc)]
			if !ok {
				if sc, err = argschema.Parse(doc); err != nil {
					return nil
				}
				parsed[string(doc)] = sc
			}
			if err := sc.Check("arguments", args); err != nil {
				refusal = cmp.Or(refusal, err)
				continue
			}
			return nil
		}
		if refusal != nil {
			return fmt.Errorf("%s: %w", tool, refusal)
		}
		return nil
	}, nil
}

// advise ends the problem of err, an *agentledger.InvalidError, with how
// to queue the task anyway.
func advise(err error, override string) error {
	ie, ok := err.(*agentledger.InvalidError)
	if !ok || override == "" {
		return err
	}
	return agentledger.Invalid(ie.Field, "%s; %s to queue it for a worker that is not up yet", ie.Problem, override)
}

// list is names sorted, without duplicates, comma-separated.
func list(names []string) string { return strings.Join(sortedSet(names), ", ") }

func sortedSet(names []string) []string {
	names = slices.Clone(names)
	slices.Sort(names)
	return slices.Compact(names)
}
