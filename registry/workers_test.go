package registry_test

import (
	"context"
	"encoding/json"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/agentledger/agentledger/internal/test/testdb"
	"github.com/agentledger/agentledger/registry"
)

// An idle pool that announced itself is listed; it goes when it retires.
func TestWorkersListsIdlePools(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := pinnedStore(t, newClock())
	if err := s.Announce(ctx, "idle-1", "host", 42, []string{"default"}, []string{"noop"},
		map[string]string{"shop": "connected"}); err != nil {
		t.Fatal(err)
	}
	ws, err := s.Workers(ctx)
	if err != nil || len(ws) != 1 || ws[0].ID != "idle-1" || ws[0].Tasks != 0 || ws[0].StartedAt.IsZero() ||
		!ws[0].NextExpiry.IsZero() || ws[0].Host != "host" || ws[0].MCPServers["shop"] != "connected" {
		t.Fatalf("workers %+v %v", ws, err)
	}
	if err := s.Retire(ctx, "idle-1"); err != nil {
		t.Fatal(err)
	}
	if ws, err := s.Workers(ctx); err != nil || len(ws) != 0 {
		t.Fatalf("after retiring: %+v %v", ws, err)
	}
}

// A registration no longer refreshed is live for LiveWithin, listed (with
// when it is pruned) until PruneAfter, then no longer listed, and deleted
// by the next registration of any pool.
func TestWorkerRegistrationsAreLiveThenPruned(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newClock()
	db := testdb.New(t)
	s := registry.New(db)
	s.Now = c.Now
	t0 := c.Now()
	register := func(id string) {
		t.Helper()
		if err := s.Register(ctx, registry.Registration{ID: id, Host: "h", PID: 1, Queues: []string{"default"},
			Kinds: []string{"echo", "steps"}, Tools: map[string]json.RawMessage{"http_request": nil}}); err != nil {
			t.Fatal(err)
		}
	}
	rows := func() []string {
		t.Helper()
		var ids []string
		r, err := db.Query(ctx, `SELECT id FROM workers ORDER BY id`)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		for r.Next() {
			var id string
			if err := r.Scan(&id); err != nil {
				t.Fatal(err)
			}
			ids = append(ids, id)
		}
		return ids
	}
	register("dead")
	ws, err := s.Workers(ctx)
	if err != nil || len(ws) != 1 || !ws[0].Live || !ws[0].PruneAt.Equal(t0.Add(registry.PruneAfter)) ||
		!slices.Equal(ws[0].Kinds, []string{"echo", "steps"}) || !slices.Equal(ws[0].Tools, []string{"http_request"}) {
		t.Fatalf("a fresh registration: %+v %v", ws, err)
	}

	c.Advance(registry.LiveWithin + time.Second)
	register("live")
	ws, err = s.Workers(ctx)
	if err != nil || len(ws) != 2 || ws[0].ID != "dead" || ws[0].Live || !ws[1].Live {
		t.Fatalf("after LiveWithin: %+v %v, want dead listed but not live", ws, err)
	}
	live, err := s.LiveWorkers(ctx)
	if err != nil || len(live) != 1 || live[0].ID != "live" || !slices.Equal(live[0].Tools, []string{"http_request"}) {
		t.Fatalf("live workers: %+v %v", live, err)
	}

	// Past PruneAfter it is no longer listed; the next registration of
	// another pool deletes it.
	c.Advance(registry.PruneAfter - registry.LiveWithin)
	if ws, err := s.Workers(ctx); err != nil || len(ws) != 1 || ws[0].ID != "live" {
		t.Fatalf("after PruneAfter: %+v %v, want only live", ws, err)
	}
	if got := rows(); !slices.Equal(got, []string{"dead", "live"}) {
		t.Fatalf("rows before a registration: %v", got)
	}
	register("live")
	if got := rows(); !slices.Equal(got, []string{"live"}) {
		t.Fatalf("rows after a registration: %v, want dead pruned", got)
	}
}

// A pool announces its tools' schemas with their names; ToolSchemas reads
// those of the pools and tools asked for, as last announced.
func TestToolSchemas(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := registry.New(testdb.New(t))
	register := func(id string, tools map[string]json.RawMessage) {
		t.Helper()
		if err := s.Register(ctx, registry.Registration{ID: id, Host: "h", PID: 1, Queues: []string{"default"},
			Kinds: []string{"steps"}, Tools: tools}); err != nil {
			t.Fatal(err)
		}
	}
	strict := json.RawMessage(`{"type":"object","required":["text"]}`)
	loose := json.RawMessage(`{"type":"object"}`)
	register("a", map[string]json.RawMessage{"notify": strict, "http_request": loose, "bare": nil})
	register("b", map[string]json.RawMessage{"notify": loose})
	register("c", nil) // an older version: no tools announced
	want := map[string]map[string]any{"a": {"notify": decode(t, strict)}, "b": {"notify": decode(t, loose)}}
	check := func() {
		t.Helper()
		got, err := s.ToolSchemas(ctx, []string{"a", "b", "c"}, []string{"bare", "nope", "notify"})
		if err != nil {
			t.Fatal(err)
		}
		decoded := map[string]map[string]any{}
		for w, m := range got {
			decoded[w] = map[string]any{}
			for tool, doc := range m {
				decoded[w][tool] = decode(t, doc)
			}
		}
		if !reflect.DeepEqual(decoded, want) {
			t.Fatalf("tool schemas %v, want %v", decoded, want)
		}
	}
	check()
	live, err := s.LiveWorkers(ctx)
	if err != nil || len(live) != 3 || !slices.Equal(live[0].Tools, []string{"bare", "http_request", "notify"}) ||
		len(live[2].Tools) != 0 {
		t.Fatalf("live workers: %+v %v", live, err)
	}

	// A refresh with the same schemas keeps them; one with others
	// replaces them.
	register("a", map[string]json.RawMessage{"notify": strict, "http_request": loose, "bare": nil})
	check()
	register("b", map[string]json.RawMessage{"notify": strict})
	want["b"]["notify"] = decode(t, strict)
	check()
}

func decode(t *testing.T, doc json.RawMessage) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(doc, &v); err != nil {
		t.Fatal(err)
	}
	return v
}
