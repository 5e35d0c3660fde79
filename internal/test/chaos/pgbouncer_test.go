package chaos

import (
	"path/filepath"
	"testing"

	"github.com/agentledger/agentledger/internal/pgplan"
	"github.com/agentledger/agentledger/internal/test/pgbouncer"
)

// A short round with every daemon behind PgBouncer in transaction pooling
// mode: poll-only wake-ups, no prepared statements, no session state.
func TestChaosThroughPgBouncer(t *testing.T) {
	skipShort(t)
	drill(t, options{tasks: envInt(t, "CHAOS_TASKS", 60), agents: envInt(t, "CHAOS_AGENTS", 5),
		seconds: envInt(t, "CHAOS_SECONDS", 10), pgbouncer: pgbouncerBin(t, "the PgBouncer chaos round")})
}

// The same round through a PgBouncer that keeps prepared statements
// (1.21 or later), the daemons preparing theirs (--pgbouncer-prepared):
// a statement prepared in one transaction runs in later ones on other
// server connections, connections PgBouncer opens again after a kill
// among them.
func TestChaosThroughPgBouncerPrepared(t *testing.T) {
	skipShort(t)
	bin := pgbouncer.FindKeeping(t, "the chaos round through PgBouncer keeping prepared statements")
	drill(t, options{tasks: envInt(t, "CHAOS_TASKS", 60), agents: envInt(t, "CHAOS_AGENTS", 5),
		seconds: envInt(t, "CHAOS_SECONDS", 10), pgbouncer: bin, prepared: true})
}

// pgbouncerBin finds PgBouncer ($CHAOS_PGBOUNCER, else the installed one)
// or skips t, visibly, saying that what did not run.
func pgbouncerBin(t *testing.T, what string) string {
	t.Helper()
	return pgbouncer.Find(t, "CHAOS_PGBOUNCER", what)
}

// skipVisibly skips t with reason, on the terminal even without -v.
func skipVisibly(t *testing.T, reason string) {
	t.Helper()
	pgbouncer.SkipVisibly(t, reason)
}

// guardQuery is the check of the database's identity as
// docs/deployment.md has PgBouncer's connect_query make it: an error of
// the check (a database not migrated yet, a role that may not) must not
// undo the settings before it, which share its implicit transaction.
const guardQuery = `DO $$BEGIN PERFORM agentledger_check_ids(); ` +
	`EXCEPTION WHEN OTHERS THEN RAISE WARNING USING MESSAGE = SQLERRM; END$$`

// startPgBouncer runs PgBouncer (bin) in transaction pooling mode in front
// of the world's database and returns the URL to reach the database
// through it. Each server connection gets the daemon's session settings
// and checks the server's identity (ids advance after a failover: through
// a transaction pooler the daemon's own connections outlive it), as
// docs/deployment.md has a deployment do. prepared keeps prepared
// statements (max_prepared_statements).
func startPgBouncer(t *testing.T, w *world, bin string, prepared bool) string {
	t.Helper()
	c := pgbouncer.Config{URL: w.url, Dir: filepath.Join(w.dir, "pgbouncer"),
		ConnectQuery: pgplan.ConnectQuery() + "; " + guardQuery, PoolSize: 40, ReservePoolSize: 10}
	if prepared {
		c.Settings = map[string]string{"max_prepared_statements": "200"}
	}
	return pgbouncer.Start(t, bin, c)
}
