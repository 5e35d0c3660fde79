package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentledger/agentledger/ledger"
)

// unsafeTools names what this daemon may run that a failover could run
// twice: unsafe_http when it has hosts to call, the registered tools of
// class unsafe, and the tools of MCP servers, which are unsafe unless they
// say they are idempotent or read-only.
func unsafeTools(classes map[string]string, unsafeHosts []string, mcp []MCPServer) []string {
	var out []string
	if len(unsafeHosts) > 0 {
		out = append(out, "unsafe_http") // not Classed: its class depends on the call
	}
	for name, class := range classes {
		if class != string(ledger.Unsafe) {
			continue
		}
		if i := strings.Index(name, "/"); i > 0 && slices.ContainsFunc(mcp, func(s MCPServer) bool { return s.Name == name[:i] }) {
			continue // named below, with its server
		}
		out = append(out, name)
	}
	slices.Sort(out)
	for _, s := range mcp {
		out = append(out, fmt.Sprintf("the tools of MCP server %s without an idempotent or read-only hint", s.Name))
	}
	return out
}

// hasSyncStandbySQL is true when the server acknowledges a commit only once
// a standby has it too (synchronous replication), so that a failover keeps
// every acknowledged commit. Where this role may not see the standbys'
// states (pg_read_all_stats), a configured synchronous_standby_names is
// taken at its word.
const hasSyncStandbySQL = `SELECT current_setting('synchronous_standby_names') <> ''
	AND current_setting('synchronous_commit') IN ('on', 'remote_write', 'remote_apply')
	AND (EXISTS (SELECT FROM pg_stat_replication WHERE sync_state IN ('sync', 'quorum'))
		OR EXISTS (SELECT FROM pg_stat_replication WHERE sync_state IS NULL))`

// warnUnreplicated logs one warning when unsafe tools are enabled and the
// database has no synchronous standby: an asynchronous failover can lose
// an acknowledged commit, the ledger row of an unsafe effect with it, and
// the effect then runs again. It is a warning, not a refusal: a single
// server loses nothing to a failover. The daemon does not call it for its
// embedded cluster, which no standby can replace.
func warnUnreplicated(ctx context.Context, db *pgxpool.Pool, unsafe []string, log *slog.Logger) {
	if len(unsafe) == 0 {
		return
	}
	var sync bool
	if err := db.QueryRow(ctx, hasSyncStandbySQL).Scan(&sync); err != nil {
		log.Warn("could not tell whether the database has a synchronous standby", "err", err)
		return
	}
	if !sync {
		log.Warn("the database has no synchronous standby: after a failover to an asynchronous standby an acknowledged "+
			"ledger row can be lost, and an unsafe effect run twice (keyed effects are absorbed by their key)",
			"unsafe_tools", strings.Join(unsafe, "; "))
	}
}
