// Package pgplan holds the planner settings of the daemon's connections
// and the way a statement that reads whole tables on purpose steps out of
// them.
//
// The hot statements (claim, heartbeat, completions, the ledger's fences,
// the outbox's claims) are prepared once per connection, and PostgreSQL
// may keep a generic plan of each. A plan made while a table was small
// prefers sequential scans, and a cached plan keeps them while the table
// grows into millions of rows, until the next ANALYZE. Every hot statement
// has an index path bounded by its batch, so the daemon's sessions turn
// sequential scans off: the planner then takes the index path at every
// size. A path the setting turns off still exists at a prohibitive cost
// (10^10), which would make every plan that keeps one — a scan of a small
// table with no index, like the notification rules — look expensive enough
// to JIT-compile on each execution; the daemon's statements are short, and
// JIT is off. Statements that read a whole table by design (metrics gauges,
// operator counts, key-prefix searches) turn them back on for their own
// transaction with SeqScan.
package pgplan

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/jackc/pgx/v5"
)

// Settings are the session settings of the daemon's connections, sent at
// connection start. Through a pooler they cannot be (its server
// connections are shared): its connect_query sets them (ConnectQuery),
// and where prepared statements are kept (agentd --pgbouncer-prepared)
// they matter as on a direct connection.
var Settings = map[string]string{"enable_seqscan": "off", "jit": "off"}

// ConnectQuery is Settings as one query, for a pooler to run on each
// server connection it opens (PgBouncer's connect_query): through a
// transaction pooler the daemon cannot set its sessions itself, and its
// statements would be planned with sequential scans allowed.
func ConnectQuery() string {
	keys := make([]string, 0, len(Settings))
	for k := range Settings {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = "SET " + k + " = " + Settings[k]
	}
	return strings.Join(parts, "; ")
}

// Beginner starts transactions: a pool, a connection or a transaction.
type Beginner interface {
	Begin(ctx context.Context) (pgx.Tx, error)
}

// SeqScan runs fn in a read transaction of db in which the planner may
// scan tables sequentially.
func SeqScan(ctx context.Context, db Beginner, fn func(tx pgx.Tx) error) error {
	tx, err := db.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // read-only; nothing to keep
	if _, err := tx.Exec(ctx, "SET LOCAL enable_seqscan = on"); err != nil {
		return fmt.Errorf("enable_seqscan: %w", err)
	}
	if err := fn(tx); err != nil {
		return err
	}
	return tx.Commit(ctx)
}
