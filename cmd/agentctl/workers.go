package main

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentledger/agentledger/claims"
)

// defaultStaleAfter is how long a worker may go without renewing a lease
// before agentctl workers calls it stale: a few heartbeats at agentd's
// defaults (a 30s lease renewed every 10s).
const defaultStaleAfter = time.Minute

func (a *app) workersCmd() *cobra.Command {
	var staleAfter time.Duration
	cmd := &cobra.Command{
		Use:   "workers",
		Short: "List the workers holding leases, and the stale ones",
		Long: `List the workers that hold task leases now: how many running tasks each
holds, how long ago it last renewed a lease (its heartbeat) or claimed a
task, when its next lease runs out unless renewed, and how many of its leases
have already expired.

A worker is STALE when any of its leases expired or it has not renewed one
for longer than --stale-after: it died, stalled or lost the database. Tasks
whose leases expired are claimed again by live workers (their fencing tokens
change, so the stale worker's late writes change nothing).

Workers are known by their leases: a worker that holds no task is not
listed. With --output json it prints an array of workers.`,
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
	// LastHeartbeat is its latest lease renewal or claim.
	LastHeartbeat       time.Time `json:"last_heartbeat"`
	HeartbeatAgeSeconds float64   `json:"heartbeat_age_seconds"`
	NextExpiry          time.Time `json:"next_lease_expiry"`
	Expired             int64     `json:"expired_leases"`
	Stale               bool      `json:"stale"`
	// MCPServers are the states of its daemon's MCP servers.
	MCPServers map[string]string `json:"mcp_servers,omitempty"`
}

func (a *app) workers(ctx context.Context, staleAfter time.Duration) error {
	if staleAfter <= 0 {
		return usagef("--stale-after must be positive, not %s", staleAfter)
	}
	s, err := a.store(ctx)
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
		_, err := fmt.Fprintln(a.stderr, "no worker is running: no daemon announced itself in the last day, and no lease is held")
		return err
	}
	t := newTable(a.stdout, "WORKER", "TASKS", "LAST HEARTBEAT", "NEXT EXPIRY", "EXPIRED", "STATUS")
	for _, w := range out {
		status := "ok"
		if w.Stale {
			status = "STALE"
		}
		t.row(w.ID, strconv.FormatInt(w.Tasks, 10), short(time.Duration(w.HeartbeatAgeSeconds*float64(time.Second)))+" ago",
			expiry(w.NextExpiry, now),
			strconv.FormatInt(w.Expired, 10), status)
	}
	if err := t.flush(); err != nil {
		return err
	}
	for _, w := range out {
		names := make([]string, 0, len(w.MCPServers))
		for name := range w.MCPServers {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			fmt.Fprintf(a.stdout, "  %s: MCP server %s %s\n", w.ID, name, w.MCPServers[name])
		}
	}
	if stale > 0 {
		fmt.Fprintf(a.stderr, "%s stale (an expired lease, or no heartbeat for over %s): "+
			"its tasks are claimed again once their leases run out\n", plural(int64(stale), "worker"), short(staleAfter))
	}
	return nil
}

// viewWorker is w as printed, judged stale against now.
func viewWorker(w claims.Worker, now time.Time, staleAfter time.Duration) workerView {
	// The heartbeat is the database's clock; a little skew ahead is now.
	age := max(now.Sub(w.LastHeartbeat), 0)
	return workerView{ID: w.ID, Tasks: w.Tasks, LastHeartbeat: w.LastHeartbeat, HeartbeatAgeSeconds: age.Round(time.Second).Seconds(),
		NextExpiry: w.NextExpiry, Expired: w.Expired, Stale: w.Expired > 0 || age > staleAfter, MCPServers: w.MCPServers}
}

// expiry is when the next lease runs out, or "-" without leases.
func expiry(t, now time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return relative(t, now)
}
