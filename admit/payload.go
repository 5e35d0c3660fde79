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
// schema (tools.BuiltinKindSchemas), a kind this process serves through
// Typed (a typed kind in full: its Go type and Validate), any other
// against the schema its serving daemon published, if one did.
// Published schemas are remembered for schemaTTL, so a submission costs
// no extra query most of the time.
func (d *Door) payload(ctx context.Context, db registry.DB, kind string, payload json.RawMessage) error {
	if schema, ok := tools.BuiltinKindSchemas[kind]; ok {
		return argschema.CheckDoc(schema, "payload", payload)
	}
	if d.Typed != nil {
		if known, err := d.Typed(kind, payload); known {
			return err
		}
	}
	schema, ok, err := d.schemas.get(ctx, db, kind)
	if err != nil || !ok {
		return err
	}
	return argschema.CheckDoc(schema, "payload", payload)
}

// schemaTTL is how long a published payload schema (or its absence) is
// remembered.
const schemaTTL = 10 * time.Second

// schemaCache remembers the payload schemas the daemons published.
type schemaCache struct {
	mu    sync.Mutex
	known map[string]cachedSchema
}

type cachedSchema struct {
	doc json.RawMessage
	ok  bool
	at  time.Time
}

func (c *schemaCache) get(ctx context.Context, db registry.DB, kind string) (json.RawMessage, bool, error) {
	c.mu.Lock()
	s, hit := c.known[kind]
	c.mu.Unlock()
	if hit && time.Since(s.at) < schemaTTL {
		return s.doc, s.ok, nil
	}
	doc, ok, err := registry.New(db).KindSchema(ctx, kind)
	if err != nil {
		return nil, false, err
	}
	c.mu.Lock()
	if c.known == nil {
		c.known = map[string]cachedSchema{}
	}
	c.known[kind] = cachedSchema{doc: doc, ok: ok, at: time.Now()}
	c.mu.Unlock()
	return doc, ok, nil
}
