package tui

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentledger/agentledger/registry"
)

func TestWorkersViewHighlightsStale(t *testing.T) {
	t.Parallel()
	store := newFakeStore(1, epoch)
	store.workers = []registry.Worker{
		{ID: "alpha-1", Tasks: 12, LastHeartbeat: epoch.Add(-3 * time.Second), NextExpiry: epoch.Add(27 * time.Second),
			StartedAt: epoch.Add(-time.Hour), Queues: []string{"default", "billing"}, Kinds: []string{"steps", "echo"},
			MCPServers: map[string]string{"shop": "connected", "crm": "failed"},
			Caps:       []string{"agent:2", "mcp:shop", "model", "tool:echo"}},
		{ID: "beta-2", Tasks: 3, LastHeartbeat: epoch.Add(-2 * time.Minute), NextExpiry: epoch.Add(-90 * time.Second), Expired: 3},
		{ID: "gamma-3", Tasks: 1, LastHeartbeat: epoch.Add(-45 * time.Second), NextExpiry: epoch.Add(5 * time.Second),
			StartedAt: epoch.Add(-time.Hour), Queues: []string{"default"}, PruneAt: epoch.Add(4*time.Minute + 15*time.Second),
			MCPServers: map[string]string{"shop": "connected"}},
	}
	d := newDriver(t, store, Options{}, 100, 20)
	d.keys("w")
	v := d.view()
	checkFrame(t, v, 100, 20)
	for _, want := range []string{
		"3 workers holding 16 leases · 2 stale",
		"alpha-1 12     3s ago     in 27s       0        ok",
		"  queues default, billing · kinds steps, echo · MCP crm failed, shop connected",
		"  runs: model endpoint · MCP shop · tools echo",
		"beta-2  3      2m ago     1m ago       3        STALE: 3 lease(s) ran out",
		"  queues and kinds not announced: it only holds leases",
		"gamma-3 1      45s ago    in 5s        0        STALE, pruned in 4m",
		"  queues default · kinds - · MCP last reported shop connected", // silent for 45s: it may be gone
	} {
		if !strings.Contains(v, want) {
			t.Errorf("workers view lacks %q:\n%s", want, v)
		}
	}
	if strings.Contains(v, "no live workers") {
		t.Errorf("alpha-1 is live, yet:\n%s", v)
	}
	d.keys("esc")
	if d.app().view != viewTasks {
		t.Error("esc did not go back to the tasks")
	}
}

// At 80 columns a worker's announcements wrap under themselves: every
// tool and host stays on the screen, none ends in "…".
func TestWorkersViewWrapsAnnouncementsAt80(t *testing.T) {
	t.Parallel()
	store := newFakeStore(1, epoch)
	store.workers = []registry.Worker{{ID: "vm-26750-59314c", LastHeartbeat: epoch.Add(-time.Second), StartedAt: epoch.Add(-time.Hour),
		Queues: []string{"default"}, Kinds: []string{"agent", "echo", "noop", "sleep", "steps"},
		Caps: []string{"http_request@http://127.0.0.1:7460", "unsafe_http@http://127.0.0.1:7460", "tool:http_request", "tool:unsafe_http",
			"tool:create_task", "tool:notify", "tool:wait_for_children", "tool:wait_for_signal", "tool:wait_timer"}}}
	d := newDriver(t, store, Options{}, 80, 24)
	d.keys("w")
	v := d.view()
	checkFrame(t, v, 80, 24)
	if strings.Contains(v, "…") {
		t.Fatalf("a cut line at 80 columns:\n%s", v)
	}
	for _, want := range []string{"  runs: http_request → http://127.0.0.1:7460 · unsafe_http →", "wait_timer"} {
		if !strings.Contains(v, want) {
			t.Errorf("workers view lacks %q:\n%s", want, v)
		}
	}
}

// The title says when no worker is live, in every view, and stops saying
// it once one is.
func TestNoLiveWorkersInTheTitle(t *testing.T) {
	t.Parallel()
	store := newFakeStore(3, epoch)
	store.workers = []registry.Worker{{ID: "dead-1", LastHeartbeat: epoch.Add(-time.Hour), StartedAt: epoch.Add(-2 * time.Hour)}}
	d := newDriver(t, store, Options{}, 100, 20)
	title := func() string { return strings.SplitN(d.view(), "\n", 2)[0] }
	if got := title(); got != "agentledger › tasks · no live workers" {
		t.Errorf("title %q", got)
	}
	d.keys("enter")
	if got := title(); got != "agentledger › task 3 · no live workers" {
		t.Errorf("title %q", got)
	}
	store.mu.Lock()
	store.workers = append(store.workers, registry.Worker{ID: "live-2", LastHeartbeat: epoch, StartedAt: epoch})
	store.mu.Unlock()
	d.send(tickMsg{})
	if got := title(); got != "agentledger › task 3" {
		t.Errorf("with a live worker, title %q", got)
	}
}

// A worker pool announced in the database shows its queues, kinds and MCP
// servers; while it is live the title says nothing of workers.
func TestConsoleWorkersFromTheDatabase(t *testing.T) {
	s := seedDB(t)
	s.Registry.Now = nil
	if err := s.Registry.Announce(context.Background(), "pool-1", "host-1", 4242, []string{"billing", "default"},
		[]string{"echo", "steps"}, map[string]string{"shop": "connected"}); err != nil {
		t.Fatal(err)
	}
	tm := startConsoleWith(t, s, Options{Now: time.Now})
	waitFor(t, tm, "page 1 · 4 tasks")
	press(tm, "w")
	waitFor(t, tm, "1 worker holding 0 leases", "pool-1", "queues billing, default · kinds echo, steps · MCP shop connected")
	if v := finish(t, tm); strings.Contains(v, "no live workers") {
		t.Errorf("the announced pool is not live:\n%s", v)
	}
}

// With no worker in the database, the title says so.
func TestConsoleNoLiveWorkers(t *testing.T) {
	tm := startConsole(t, seedDB(t))
	waitFor(t, tm, "agentledger › tasks · no live workers", "page 1 · 4 tasks")
	finish(t, tm)
}
