package admit

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/agent"
	"github.com/agentledger/agentledger/argschema"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/registry"
	"github.com/agentledger/agentledger/steps"
	"github.com/agentledger/agentledger/tools"
)

// payload checks a payload against its kind: a built-in kind against its
// schema (tools.BuiltinKindSchemas); a kind this process serves through
// Typed in full (its Go type and Validate); and a typed kind against the
// schema of each live pool that would claim it from queue (a task may go
// to any of them), or while none is live the schema last published.
// Published schemas are remembered for schemaTTL, so a submission costs
// no extra query most of the time.
func (d *Door) payload(ctx context.Context, db registry.DB, kind, queue string, payload json.RawMessage) error {
	if schema, ok := tools.BuiltinKindSchemas[kind]; ok {
		return argschema.CheckDoc(schema, "payload", payload)
	}
	served := false
	if d.Typed != nil {
		known, err := d.Typed(kind, queue, payload)
		if err != nil {
			return err
		}
		served = known
	}
	if served && d.Unserved {
		return nil // no fleet whose pools could take it instead
	}
	published, err := d.schemas.get(ctx, db, kind, queue)
	if err != nil {
		return err
	}
	for _, p := range published {
		if served && !p.Live {
			continue // this process serves it: not a schema someone else published before
		}
		if err := argschema.CheckDoc(p.Schema, "payload", payload); err != nil {
			return err
		}
	}
	return nil
}

// schemaTTL is how long the published payload schemas (or their absence)
// are remembered.
const schemaTTL = 10 * time.Second

// schemaSweepAt is how many entries the cache holds before an insert
// drops those past schemaTTL: submissions name any kind and queue (a
// typed kind is looked up on whatever queue a request says), and without
// it each pair ever named would be kept for the life of the process.
const schemaSweepAt = 1024

// schemaCache remembers the payload schemas the daemons published, by kind
// and queue, each for schemaTTL.
type schemaCache struct {
	mu    sync.Mutex
	known map[[2]string]cachedSchemas
	sweep int              // the size at which the next insert sweeps; schemaSweepAt at least
	now   func() time.Time // time.Now; a test's clock
}

type cachedSchemas struct {
	published []registry.Published
	at        time.Time
}

func (c *schemaCache) clock() time.Time {
	if c.now != nil {
		return c.now()
	}
	return time.Now()
}

func (c *schemaCache) get(ctx context.Context, db registry.DB, kind, queue string) ([]registry.Published, error) {
	key := [2]string{kind, queue}
	c.mu.Lock()
	s, hit := c.known[key]
	c.mu.Unlock()
	if hit && c.clock().Sub(s.at) < schemaTTL {
		return s.published, nil
	}
	published, err := registry.New(db).KindSchemas(ctx, kind, queue)
	if err != nil {
		return nil, err
	}
	c.put(key, published)
	return published, nil
}

// put remembers key's schemas, first dropping the entries past their
// time once the cache has grown to its sweep size: schemaSweepAt, or twice
// what the last sweep kept, so that a burst of fresh entries is not swept
// at every insert.
func (c *schemaCache) put(key [2]string, published []registry.Published) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.clock()
	if c.known == nil {
		c.known = map[[2]string]cachedSchemas{}
	}
	if len(c.known) >= max(c.sweep, schemaSweepAt) {
		for k, e := range c.known {
			if now.Sub(e.at) >= schemaTTL {
				delete(c.known, k)
			}
		}
		c.sweep = 2 * len(c.known)
	}
	c.known[key] = cachedSchemas{published: published, at: now}
}

// childPayloads refuses a steps payload whose create_task calls name a
// child (its kind and payload literally) that the door would refuse when
// the call queues it: a payload its kind's schema refuses, or a steps or
// agent payload malformed, down to maxChildDepth generations. Queued, the
// parent would run up to that call and fail there for good — after its
// earlier steps' effects. Unlike childrenServed this holds for every
// caller and with --allow-unserved: no worker that comes up later makes
// such a payload valid. A typed kind whose child queue is made of an
// earlier result is checked when the call runs (its schema is the
// queue's pools').
func (d *Door) childPayloads(ctx context.Context, db registry.DB, p claims.EnqueueParams, depth int) error {
	if p.Kind != steps.Kind || depth >= maxChildDepth {
		return nil
	}
	for _, n := range steps.Needs(p.Payload) {
		if n.Child == nil {
			continue
		}
		c := claims.EnqueueParams{Tenant: p.Tenant, Kind: n.Kind, Queue: cmp.Or(n.ChildQueue, claims.DefaultQueue), Payload: n.Child}
		var err error
		switch _, builtin := tools.BuiltinKindSchemas[c.Kind]; {
		case c.Kind == steps.Kind:
			err = steps.Check(c.Payload, nil)
		case c.Kind == agent.Kind:
			if perr := agent.CheckPayload(c.Payload, d.AgentMaxSteps); perr != nil {
				err = agentledger.Invalid("payload", "%v", perr)
			}
		case builtin || n.ChildQueueKnown:
			err = d.payload(ctx, db, c.Kind, c.Queue, c.Payload)
		}
		var ie *agentledger.InvalidError
		if errors.As(err, &ie) { // "step 0's child: payload: …"
			return agentledger.Invalid("payload", "%s's child: %s", n.Subject, ie.Error())
		} else if err != nil {
			return err
		}
		err = d.childPayloads(ctx, db, c, depth+1)
		if errors.As(err, &ie) { // "step 0's child: step 1's child: payload: …"
			return agentledger.Invalid("payload", "%s's child: %s", n.Subject, ie.Problem)
		} else if err != nil {
			return err
		}
	}
	return nil
}
