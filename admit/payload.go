package admit

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/agentledger/agentledger/argschema"
	"github.com/agentledger/agentledger/registry"
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
