package admit

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/agent"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/grants"
	"github.com/agentledger/agentledger/registry"
	"github.com/agentledger/agentledger/steps"
	"github.com/agentledger/agentledger/tools"
	"github.com/agentledger/agentledger/waits"
)

// Door is the one way into the tasks table: every entrance — the HTTP API,
// agentctl submit, client.Database, webhooks, cron and create_task — asks
// it to admit a task, and queues only what it returns. Its rules are
// written once here; which apply depends on the caller (the caller table,
// callers in caller.go).
//
// The zero Door checks no grant and knows no typed kind in process (it
// reads the schemas the serving daemons published): agentctl's and
// client.Database's. The daemon's holds its grants, model and typed kinds.
type Door struct {
	// Grants gives each tenant's grant; nil when none is checked.
	Grants grants.Source
	// Model is the daemon's configured model, taken as its workers' (see
	// options.Model).
	Model string
	// AgentMaxSteps is the daemon's limit of an agent task's max_steps,
	// taken as its workers' as Model is; 0 when not known (agentctl's
	// door), which checks the rest of an agent payload.
	AgentMaxSteps int
	// Typed checks the payload of a kind this process serves: a typed
	// kind's Go type and Validate (KindHandler.CheckPayload in package
	// daemon). known is false for a kind it does not serve from queue.
	// Either way
	// the payload must also fit the schema each live pool claiming the kind
	// from the task's queue announced (or, for a kind this process does not
	// serve and no live pool does, the one last published).
	Typed func(kind, queue string, payload json.RawMessage) (known bool, err error)
	// Reach is nil when this process's tool may call u (the HTTP tools'
	// allow-lists), else why not; nil checks none. A steps payload whose
	// literal URL it refuses is refused at the door, as its step would be
	// when it runs (the fleet is taken to share one configuration, as
	// Model is).
	Reach func(tool string, u *url.URL) error
	// Args is nil when this process's tool takes a call's literal
	// arguments, else why not (tools.ArgsChecker: a wait's timeout of
	// zero, a timer's malformed time); nil checks the built-in wait tools'
	// (waits.CheckArgs). A steps payload whose step would fail for its
	// arguments alone is refused at the door.
	Args func(tool string, args json.RawMessage) error
	// Pure says whether this process's tool is pure (its declared class;
	// an MCP tool's, read-only), or nil. A steps payload that gives a pure
	// call a compensation, or makes one the compensation of another, is
	// refused: from the live pools' announced classes when their tools are
	// checked, and from Pure when they are not (a submission that queues a
	// task no live pool serves, the daemon's own Client).
	Pure steps.PureCheck
	// Unserved queues every task whether or not a live worker serves it,
	// whoever submits it: for a database without a fleet (tests).
	Unserved bool
	// Starter is the worker pool of this process, which takes a task it
	// would run now at its enqueue, without a claim, when it is idle
	// (claims.Store.EnqueueStart): through Enqueue over a pool, and the
	// API's enqueue; an enqueue in a transaction is never started. Nil
	// queues every task for a claim.
	Starter claims.Starter

	schemas schemaCache
}

// Submission is a task at the door.
type Submission struct {
	Caller Caller
	Params claims.EnqueueParams
	// Unserved queues the task for a worker that is not up yet: no live
	// worker need serve it (its kind, queue and tools are not checked, nor
	// its literal URLs against the HTTP tools' allow-lists).
	Unserved bool
	// Override says how the submitter asks for Unserved ("submit with
	// --allow-unserved"); a refusal ends with it.
	Override string
	// Grant is the tenant's grant when the caller has read it already (a
	// parent task's, read before its step); else the door reads it.
	Grant *grants.Grant
}

// Admit checks s and returns the task to queue: claims' defaults filled,
// bounded by the tenant's grant for the callers that are bound. db (a
// pool or the caller's transaction) reads the registry and the published
// schemas. Errors are *agentledger.InvalidError naming the field (422,
// exit 2) or *grants.DeniedError (403); nothing is written.
func (d *Door) Admit(ctx context.Context, db registry.DB, s Submission) (claims.EnqueueParams, error) {
	r, ok := callers[s.Caller]
	if !ok {
		return claims.EnqueueParams{}, fmt.Errorf("admit: no rules for caller %s", s.Caller)
	}
	p := s.Params
	if string(p.Payload) == "null" {
		p.Payload = nil // as if absent: {}
	}
	if err := p.Validate(); err != nil {
		return p, err
	}
	g := s.Grant
	if r.grant && g == nil && d.Grants != nil {
		var err error
		if g, err = d.Grants.For(ctx, p.Tenant); err != nil {
			return p, err
		}
	}
	if !r.grant {
		g = nil
	}
	if g != nil {
		if err := g.Allow(p.Tenant, grants.Need{Kind: p.Kind}); err != nil {
			return p, err
		}
	}
	if r.bound {
		bound(g, &p)
	}
	if err := d.payload(ctx, db, p.Kind, p.Queue, p.Payload); err != nil {
		return p, err
	}
	// What it needs of the pool that runs it: claims match it, and the
	// check below refuses a task no live pool can run.
	p.Needs = needsOf(p)
	args := d.Args
	if args == nil {
		args = waits.CheckArgs
	}
	if p.Kind == agent.Kind {
		if err := agent.CheckPayload(p.Payload, d.AgentMaxSteps); err != nil {
			return p, agentledger.Invalid("payload", "%v", err)
		}
	}
	err := check(ctx, registry.New(db), p, g, options{Anyway: d.Unserved || !r.served || s.Unserved,
		Unreached: s.Unserved, Override: s.Override, Model: d.Model, Reach: d.Reach, Args: args, Pure: d.Pure, Anonymous: r.grant})
	if err == nil {
		err = d.childPayloads(ctx, db, p, 0)
	}
	return p, err
}

// Enqueue admits s and queues the task through db (a pool or the
// caller's transaction).
func (d *Door) Enqueue(ctx context.Context, db claims.DB, s Submission) (claims.EnqueueResult, error) {
	p, err := d.Admit(ctx, db, s)
	if err != nil {
		return claims.EnqueueResult{}, err
	}
	return claims.New(db).EnqueueStart(ctx, p, d.Starter)
}

// bound keeps p, a task queued for the tenant whose grant is g, from
// jumping ahead of the tasks already waiting: a priority more urgent than
// g's floor is raised to it, and a run_at in the past becomes now (zero:
// the database's clock). A nil g (nothing checked) bounds run_at only.
func bound(g *grants.Grant, p *claims.EnqueueParams) {
	if g != nil {
		p.Priority = max(p.Priority, g.PriorityFloor)
	}
	if !p.RunAt.After(time.Now()) {
		p.RunAt = time.Time{}
	}
}

// EnqueueChild queues p, a child of a running task whose tenant's grant is
// g, through db (its ledger row's transaction): the door of create_task
// (tools.ChildDoor), its caller Parent.
func (d *Door) EnqueueChild(ctx context.Context, db claims.DB, g *grants.Grant, p claims.EnqueueParams) (claims.EnqueueResult, error) {
	return d.Enqueue(ctx, db, Submission{Caller: Parent, Params: p, Grant: g})
}

var _ tools.ChildDoor = (*Door)(nil)
