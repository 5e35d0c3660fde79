package registry_test

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/agentledger/agentledger/registry"
)

// A typed kind's payload is held against the schemas of the live pools
// that claim it from the task's queue, each distinct one once; a pool on
// another queue does not count, nor one no longer live, whose schema
// stays only as the last published.
func TestKindSchemasAreTheLivePoolsOfTheQueue(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newClock()
	s := pinnedStore(t, c)
	order := json.RawMessage(`{"type": "object", "properties": {"order_id": {"type": "string"}}}`)
	other := json.RawMessage(`{"type": "object", "properties": {"x": {"type": "integer"}}}`)
	register := func(id string, queues []string, schema json.RawMessage) {
		t.Helper()
		if err := s.Register(ctx, registry.Registration{ID: id, Host: "h", PID: 1, Queues: queues,
			Kinds: []string{"charge_order"}, KindSchemas: map[string]json.RawMessage{"charge_order": schema}}); err != nil {
			t.Fatal(err)
		}
	}
	schemas := func(queue string) []string {
		t.Helper()
		ps, err := s.KindSchemas(ctx, "charge_order", queue)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, p := range ps {
			var v map[string]any
			if err := json.Unmarshal(p.Schema, &v); err != nil {
				t.Fatal(err)
			}
			props := v["properties"].(map[string]any)
			for name := range props {
				out = append(out, p.By+":"+name+":"+map[bool]string{true: "live", false: "published"}[p.Live])
			}
		}
		return out
	}
	register("shop-1", []string{"default"}, order)
	register("shop-2", []string{"default"}, order)
	register("probe", []string{"probe"}, other)
	if got, want := schemas("default"), []string{"shop-1:order_id:live"}; !reflect.DeepEqual(got, want) {
		t.Errorf("default: %v, want %v (one schema, two pools; probe claims from another queue)", got, want)
	}
	if got, want := schemas("probe"), []string{"probe:x:live"}; !reflect.DeepEqual(got, want) {
		t.Errorf("probe: %v, want %v", got, want)
	}
	if cs, err := s.KindConflicts(ctx, "shop-1"); err != nil || len(cs) != 0 {
		t.Errorf("conflicts of shop-1 with pools on other queues or with the same schema: %+v, %v", cs, err)
	}

	// The other program comes to the same queue: both schemas hold there,
	// and each pool sees the other's.
	register("probe", []string{"probe", "default"}, other)
	if got, want := schemas("default"), []string{"probe:x:live", "shop-1:order_id:live"}; !reflect.DeepEqual(got, want) {
		t.Errorf("default with probe on it: %v, want %v", got, want)
	}
	cs, err := s.KindConflicts(ctx, "probe")
	want := []registry.KindConflict{{Kind: "charge_order", Worker: "shop-1", Queues: []string{"default"}},
		{Kind: "charge_order", Worker: "shop-2", Queues: []string{"default"}}}
	if err != nil || !reflect.DeepEqual(cs, want) {
		t.Errorf("conflicts of probe: %+v, %v; want %+v", cs, err, want)
	}

	// Once no pool is live, the pool last seen claiming from the queue
	// decides there, whoever published last; on a queue no pool ever
	// claimed from, the schema last published.
	if err := s.PublishKinds(ctx, "probe", map[string]json.RawMessage{"charge_order": other}); err != nil {
		t.Fatal(err)
	}
	c.Advance(time.Second)
	register("shop-2", []string{"default"}, order) // seen last on default
	c.Advance(registry.LiveWithin + time.Second)
	if got, want := schemas("default"), []string{"shop-2:order_id:published"}; !reflect.DeepEqual(got, want) {
		t.Errorf("with no live pool: %v, want %v (the pool last seen on the queue)", got, want)
	}
	if got := schemas("elsewhere"); !reflect.DeepEqual(got, []string{"probe:x:published"}) {
		t.Errorf("a queue no pool claims from: %v, want the schema last published", got)
	}
}
