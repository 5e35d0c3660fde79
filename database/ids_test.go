package database_test

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentledger/agentledger/database"
	"github.com/agentledger/agentledger/internal/test/testdb"
	"github.com/agentledger/agentledger/pgembed"
)

// insert inserts a task and returns its id.
func insert(t *testing.T, db *pgxpool.Pool) int64 {
	t.Helper()
	var id int64
	if err := db.QueryRow(context.Background(), `INSERT INTO tasks (kind) VALUES ('k') RETURNING id`).Scan(&id); err != nil {
		t.Fatal(err)
	}
	return id
}

// open opens url as agentd does, logging to logs.
func open(t *testing.T, url string, logs *bytes.Buffer) *database.DB {
	t.Helper()
	db, err := database.Open(context.Background(), database.Config{URL: url, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close(context.Background()) })
	return db
}

// A database that is not the one recorded — on another timeline (a
// promotion), another server (a dump restored elsewhere) or restored
// logically (its tables made anew) — has its ids advanced, to the clock in
// microseconds, by the first connection opened to it, once however many
// open at once, before anything inserts; the recorded database keeps its
// ids.
func TestIdsAdvanceInAnotherDatabase(t *testing.T) {
	t.Parallel()
	for moved, set := range map[string]string{
		"timeline":          `timeline = timeline + 1`,
		"system identifier": `system_identifier = system_identifier - 1`,
		"table":             `table_oid = 1`,
	} {
		t.Run(moved, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			url := testdb.URL(t)
			admin := testdb.Open(t, url)
			first := insert(t, admin)

			// The recorded database: nothing moves.
			var logs bytes.Buffer
			if id := insert(t, open(t, url, &logs).Pool); id != first+1 {
				t.Fatalf("in the recorded database the next id is %d, want %d", id, first+1)
			}

			// Another: the first connection advances the ids.
			if _, err := admin.Exec(ctx, `UPDATE database_identity SET `+set); err != nil {
				t.Fatal(err)
			}
			before := time.Now().UnixMicro()
			id := insert(t, open(t, url, &logs).Pool)
			if id < before {
				t.Errorf("the first task inserted after the move got id %d, want at least the clock in microseconds, %d", id, before)
			}
			if n := strings.Count(logs.String(), "ids advanced"); n != 1 {
				t.Errorf("want one warning that the ids advanced, got %d:\n%s", n, logs.String())
			}

			// Again, with eight connections checking at once: one advances.
			if _, err := admin.Exec(ctx, `UPDATE database_identity SET `+set); err != nil {
				t.Fatal(err)
			}
			conns := make([]*pgx.Conn, 8)
			for i := range conns {
				var err error
				if conns[i], err = pgx.Connect(ctx, url); err != nil {
					t.Fatal(err)
				}
				defer conns[i].Close(ctx)
			}
			var wg sync.WaitGroup
			start := make(chan struct{})
			nexts := make([]*int64, len(conns))
			for i, c := range conns {
				wg.Go(func() {
					<-start
					if err := c.QueryRow(ctx, `SELECT agentledger_check_ids()`).Scan(&nexts[i]); err != nil {
						t.Error(err)
					}
				})
			}
			close(start)
			wg.Wait()
			var next int64
			for _, n := range nexts {
				if n != nil {
					if next != 0 {
						t.Fatalf("two of %d checks at once advanced the ids", len(conns))
					}
					next = *n
				}
			}
			if next <= id {
				t.Fatalf("after a second move the next task id is %d, want above %d", next, id)
			}

			// Every id sequence of the schema moved, not only the tasks' (a
			// sequence's own last_value is its next value after setval with
			// is_called false; pg_sequences shows NULL for it).
			names := sequences(t, admin)
			for _, name := range names {
				var last int64
				if err := admin.QueryRow(ctx, `SELECT last_value FROM `+pgx.Identifier{name}.Sanitize()).Scan(&last); err != nil {
					t.Fatal(err)
				}
				if last < next {
					t.Errorf("sequence %s is at %d after the move, want %d or more", name, last, next)
				}
			}
			if len(names) != 8 {
				t.Errorf("%d id sequences (%v), want the 8 the schema has: a new one needs a line in agentledger_advance_ids", len(names), names)
			}
		})
	}
}

// sequences lists the schema's sequences but goose's own.
func sequences(t *testing.T, db *pgxpool.Pool) []string {
	t.Helper()
	rows, err := db.Query(context.Background(), `SELECT sequencename FROM pg_sequences
		WHERE schemaname = current_schema() AND sequencename <> 'agentledger_migrations_id_seq' ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// A dump restored into a new database, as a restore from a pg_dump backup
// does, issues none of the ids the dumped database issued after the dump
// was taken: the restored row of the identity names a table the restore
// made anew.
func TestARestoredDumpIssuesNoIdAgain(t *testing.T) {
	t.Parallel()
	dir, err := pgembed.FindBinaries("")
	if err != nil {
		t.Fatal(err)
	}
	pgDump, psql := filepath.Join(dir, "pg_dump"), filepath.Join(dir, "psql")
	for _, bin := range []string{pgDump, psql} {
		if _, err := os.Stat(bin); err != nil {
			t.Skipf("no %s beside the server binaries: %v", filepath.Base(bin), err)
		}
	}
	url := testdb.URL(t)
	src := testdb.Open(t, url)
	insert(t, src)
	dump, err := exec.Command(pgDump, "--no-owner", "--dbname", url).Output()
	if err != nil {
		t.Fatalf("pg_dump: %v", err)
	}
	lost := insert(t, src) // after the backup: lost by the restore

	restored := testdb.Empty(t)
	cmd := exec.Command(psql, "--quiet", "--no-psqlrc", "--set", "ON_ERROR_STOP=1", "--dbname", restored)
	cmd.Stdin = bytes.NewReader(dump)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("restoring the dump: %v\n%s", err, out)
	}
	var logs bytes.Buffer
	if id := insert(t, open(t, restored, &logs).Pool); id <= lost {
		t.Errorf("the restored database's first task got id %d; the task lost with the restore had %d", id, lost)
	}
}

// A read-only session on the primary (default_transaction_read_only)
// opens after a move without advancing anything: it inserts nothing.
func TestAReadOnlySessionLeavesTheIds(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := testdb.URL(t)
	admin := testdb.Open(t, url)
	before := insert(t, admin)
	if _, err := admin.Exec(ctx, `UPDATE database_identity SET timeline = timeline + 1`); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	open(t, url+sep+"default_transaction_read_only=on", &logs)
	if logs.Len() > 0 {
		t.Errorf("a read-only session's check logged (want it left alone, silently):\n%s", logs.String())
	}
	if id := insert(t, admin); id != before+1 {
		t.Errorf("the first task after a read-only session's check got id %d, want %d", id, before+1)
	}
}

// A database not yet migrated to the record of its identity opens as
// before (agentctl migrate up and a daemon about to migrate connect to it).
func TestAnUnmigratedDatabaseOpens(t *testing.T) {
	t.Parallel()
	db, err := database.Open(context.Background(), database.Config{URL: testdb.Empty(t)})
	if err != nil {
		t.Fatalf("Open of an unmigrated database: %v", err)
	}
	db.Close(context.Background())
}

// AdvanceIDs moves the ids on by hand (for a restore the check cannot
// tell) and says the next task id; ids only grow.
func TestAdvanceIDs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.New(t)
	before := time.Now().UnixMicro()
	next, err := database.AdvanceIDs(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	if id := insert(t, pool); next < before || id != next {
		t.Errorf("AdvanceIDs said %d and the next task got %d, want both the same and at least %d", next, id, before)
	}
	again, err := database.AdvanceIDs(ctx, pool)
	if err != nil || again <= next {
		t.Errorf("a second AdvanceIDs said %d, %v, want above %d", again, err, next)
	}
}

// checkRaising returns a new database whose identity check raises message
// with the condition named.
func checkRaising(t *testing.T, message, condition string) string {
	t.Helper()
	url := testdb.URL(t)
	if _, err := testdb.Open(t, url).Exec(context.Background(), `CREATE OR REPLACE FUNCTION agentledger_check_ids(first boolean DEFAULT false) RETURNS bigint
		LANGUAGE plpgsql AS $$BEGIN RAISE EXCEPTION '`+message+`' USING ERRCODE = '`+condition+`'; END$$`); err != nil {
		t.Fatal(err)
	}
	return url
}

// A check the server refuses lets the connection through, with a warning:
// a safety net must not keep a daemon from its database.
func TestARefusedCheckLetsTheConnectionThrough(t *testing.T) {
	t.Parallel()
	url := checkRaising(t, "not here", "feature_not_supported")
	var logs bytes.Buffer
	db := open(t, url, &logs)
	insert(t, db.Pool)
	if !strings.Contains(logs.String(), "could not check the database's identity") || !strings.Contains(logs.String(), "0A000") {
		t.Errorf("want a warning naming the refusal, logged:\n%s", logs.String())
	}
}

// A check cut short by the server going away (a shutdown or a failover
// under the new connection) fails the connection, as the outage fails
// any, and warns nothing: the outage is said once, by its own lines.
func TestACheckCutShortByAnOutageFailsTheConnection(t *testing.T) {
	t.Parallel()
	url := checkRaising(t, "terminating connection due to administrator command", "admin_shutdown")
	var logs bytes.Buffer
	_, err := database.Open(context.Background(), database.Config{URL: url, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err == nil || !strings.Contains(err.Error(), "57P01") {
		t.Errorf("open while the check is cut short: %v, want the connection failed with 57P01", err)
	}
	if logs.Len() > 0 {
		t.Errorf("want nothing logged, got:\n%s", logs.String())
	}
}

// A database with no record of itself (restored without the row) has its
// ids advanced and is recorded; a part of the identity recorded as 0
// (read by a role or on a server that keeps it to itself) is unknown, and
// matches.
func TestNoRecordAdvancesAndAnUnknownPartMatches(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := testdb.URL(t)
	admin := testdb.Open(t, url)
	if _, err := admin.Exec(ctx, `DELETE FROM database_identity`); err != nil {
		t.Fatal(err)
	}
	before := time.Now().UnixMicro()
	var logs bytes.Buffer
	id := insert(t, open(t, url, &logs).Pool)
	if id < before || !strings.Contains(logs.String(), "ids advanced") {
		t.Fatalf("with no record the first task got id %d (want at least %d), logged:\n%s", id, before, logs.String())
	}
	if _, err := admin.Exec(ctx, `UPDATE database_identity SET system_identifier = 0, timeline = 0`); err != nil {
		t.Fatal(err)
	}
	logs.Reset()
	if next := insert(t, open(t, url, &logs).Pool); next != id+1 || logs.Len() > 0 {
		t.Errorf("with the identifier and timeline unknown the next id is %d (want %d), logged:\n%s", next, id+1, logs.String())
	}
}
