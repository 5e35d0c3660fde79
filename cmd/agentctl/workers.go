package main

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentledger/agentledger/registry"
	"github.com/agentledger/agentledger/render"
	"github.com/agentledger/agentledger/tui"
)

// defaultStaleAfter is how long a worker may go without announcing
// itself or renewing a lease before agentctl workers calls it stale: three
// announcements missed (pools announce every 10s), as the console's. The
// submit check counts a pool live for longer (registry.LiveWithin), so
// that a slow minute refuses no submission.
const defaultStaleAfter = tui.DefaultStaleAfter

func (a *app) workersCmd() *cobra.Command {
	var staleAfter time.Duration
	cmd := &cobra.Command{
		Use:   "workers",
		Short: "List the worker pools, what they serve, and the stale ones",
		Long: `List the worker pools: those that announced themselves (every running
pool does so every 10s, idle or not) and those holding task leases. For
each: the queues and kinds it serves, how many running tasks it holds, its
last heartbeat (its announcement, a lease renewal or a claim), when its next
lease runs out unless renewed, and how many of its leases have already
expired.

A worker is STALE when any of its leases expired or its last heartbeat is
older than --stale-after: it died, stalled or lost the database. Tasks whose
leases expired are claimed again by live workers (their fencing tokens
change, so the stale worker's late writes change nothing). A registration
not refreshed for ` + short(registry.PruneAfter) + ` is pruned, and the status says when ("STALE,
pruned in 4m"); after that the worker is listed only while it holds leases.

agentctl submit and the HTTP API accept a task only when a live worker
(announced within the last ` + short(registry.LiveWithin) + `) serves its kind on its queue.

Below the table, what each can run beyond its kinds: its model endpoint,
MCP servers, the origins its HTTP tools may call and its tools. A task is
claimed only by a worker that has everything it needs; agentctl show says
what a waiting task lacks.
With --output json it prints an array of workers, with their tools and
capabilities too.`,
		Example: `  agentctl workers
  agentctl workers --stale-after 2m -o json`,
		Args: cobra.NoArgs,
		RunE: a.action(func(ctx context.Context, _ []string) error { return a.workers(ctx, staleAfter) }),
	}
	cmd.Flags().DurationVar(&staleAfter, "stale-after", defaultStaleAfter,
		"call a worker stale when its last heartbeat is older than this")
	return cmd
}

// workerView is a worker as agentctl workers prints it in JSON.
type workerView struct {
	ID    string `json:"worker"`
	Tasks int64  `json:"tasks"`
	// LastHeartbeat is its latest announcement, lease renewal or claim.
	LastHeartbeat       time.Time `json:"last_heartbeat"`
	HeartbeatAgeSeconds float64   `json:"heartbeat_age_seconds"`
	NextExpiry          time.Time `json:"next_lease_expiry"`
	Expired             int64     `json:"expired_leases"`
	Stale               bool      `json:"stale"`
	// Live: it announced itself within registry.LiveWithin, so submissions
	// of what it serves are accepted.
	Live bool `json:"live"`
	// PruneAt is when its registration is pruned unless refreshed; absent
	// for a worker known only by its leases.
	PruneAt *time.Time `json:"prune_at,omitempty"`
	Queues  []string   `json:"queues"`
	Kinds   []string   `json:"kinds"`
	Tools   []string   `json:"tools"`
	// MCPServers are the states of its daemon's MCP servers.
	MCPServers map[string]string `json:"mcp_servers,omitempty"`
	// Capabilities are what it can run beyond its kinds, as its claims
	// match tasks' needs ("tool:open_ticket", "model", …); absent when it
	// did not announce them (an older version, which claims any task).
	Capabilities []string `json:"capabilities,omitempty"`
}

func (a *app) workers(ctx context.Context, staleAfter time.Duration) error {
	if staleAfter <= 0 {
		return usagef("--stale-after must be positive, not %s", staleAfter)
	}
	s, err := a.workerRegistry(ctx)
	if err != nil {
		return err
	}
	ws, err := s.Workers(ctx)
	if err != nil {
		return err
	}
	now := time.Now()
	out := make([]workerView, len(ws))
	stale := 0
	for i, w := range ws {
		out[i] = viewWorker(w, now, staleAfter)
		if out[i].Stale {
			stale++
		}
	}
	if a.wantJSON() {
		return printJSON(a.stdout, out)
	}
	if len(out) == 0 {
		_, err := fmt.Fprintf(a.stderr, "no worker is running: no daemon announced itself in the last %s, and no lease is held\n",
			short(registry.PruneAfter))
		return err
	}
	t := newTable(a.stdout, "WORKER", "QUEUES", "KINDS", "TASKS", "LAST HEARTBEAT", "NEXT EXPIRY", "EXPIRED", "STATUS")
	for _, w := range out {
		t.row(w.ID, names(w.Queues), names(w.Kinds), strconv.FormatInt(w.Tasks, 10),
			short(time.Duration(w.HeartbeatAgeSeconds*float64(time.Second)))+" ago",
			render.Expiry(w.NextExpiry, now), strconv.FormatInt(w.Expired, 10), status(w, now))
	}
	if err := t.flush(); err != nil {
		return err
	}
	for _, w := range out {
		if c := render.Capabilities(w.Capabilities); c != "" {
			fmt.Fprintf(a.stdout, "  %s runs: %s\n", w.ID, c)
		}
		servers := make([]string, 0, len(w.MCPServers))
		for name := range w.MCPServers {
			servers = append(servers, name)
		}
		sort.Strings(servers)
		// A daemon that stopped announcing itself (killed, cut off) said
		// its servers' states before: they may be long gone since.
		was := ""
		if time.Duration(w.HeartbeatAgeSeconds*float64(time.Second)) > staleAfter {
			was = "last reported "
		}
		for _, name := range servers {
			fmt.Fprintf(a.stdout, "  %s: MCP server %s %s%s\n", w.ID, name, was, w.MCPServers[name])
		}
	}
	if stale > 0 {
		fmt.Fprintf(a.stderr, "%s stale (an expired lease, or no heartbeat for over %s): "+
			"tasks it held are claimed again once their leases run out\n", plural(int64(stale), "worker"), short(staleAfter))
	}
	return nil
}

// viewWorker is w as printed, judged stale against now.
func viewWorker(w registry.Worker, now time.Time, staleAfter time.Duration) workerView {
	// The heartbeat is the database's clock; a little skew ahead is now.
	age := max(now.Sub(w.LastHeartbeat), 0)
	v := workerView{ID: w.ID, Tasks: w.Tasks, LastHeartbeat: w.LastHeartbeat, HeartbeatAgeSeconds: age.Round(time.Second).Seconds(),
		NextExpiry: w.NextExpiry, Expired: w.Expired, Stale: w.Expired > 0 || age > staleAfter, Live: w.Live,
		Queues: nonNil(w.Queues), Kinds: nonNil(w.Kinds), Tools: nonNil(w.Tools), MCPServers: w.MCPServers,
		Capabilities: w.Caps}
	if !w.PruneAt.IsZero() {
		v.PruneAt = &w.PruneAt
	}
	return v
}

// status is a worker's STATUS column: ok, or STALE and when its
// registration is pruned.
func status(w workerView, now time.Time) string {
	switch {
	case !w.Stale:
		return "ok"
	case w.PruneAt == nil:
		return "STALE"
	case w.PruneAt.After(now):
		return "STALE, pruned " + relative(*w.PruneAt, now)
	}
	return "STALE, pruned now" // by the database's clock, which is behind ours
}

// names is a list for a table cell: comma-separated, or "-".
func names(list []string) string {
	if len(list) == 0 {
		return "-"
	}
	return strings.Join(list, ",")
}

func nonNil(list []string) []string {
	if list == nil {
		return []string{}
	}
	return list
}
