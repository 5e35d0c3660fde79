package migrations_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agentledger/agentledger/internal/test/testdb"
)

// upStatements returns the statements of a migration file's Up section
// (function bodies left out: they lock nothing when created) and whether
// the file runs outside a transaction.
func upStatements(t *testing.T, file string) (stmts []string, noTx bool) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	up, _, _ := strings.Cut(string(b), "-- +goose Down")
	var sql strings.Builder
	inBody := false
	for line := range strings.SplitSeq(up, "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case trimmed == "-- +goose NO TRANSACTION":
			noTx = true
		case trimmed == "-- +goose StatementBegin":
			inBody = true
		case trimmed == "-- +goose StatementEnd":
			inBody = false
		case inBody, strings.HasPrefix(trimmed, "--"):
		default:
			sql.WriteString(trimmed + " ")
		}
	}
	for s := range strings.SplitSeq(sql.String(), ";") {
		if s = strings.Join(strings.Fields(s), " "); s != "" {
			stmts = append(stmts, s)
		}
	}
	return stmts, noTx
}

var (
	createTableRe = regexp.MustCompile(`(?i)^CREATE TABLE (?:IF NOT EXISTS )?(\w+)`)
	createIndexRe = regexp.MustCompile(`(?i)^CREATE (?:UNIQUE )?INDEX (CONCURRENTLY )?(?:IF NOT EXISTS )?(\w+) ON (\w+)`)
	dropIndexRe   = regexp.MustCompile(`(?i)^DROP INDEX CONCURRENTLY IF EXISTS (\w+)$`)
	alterTableRe  = regexp.MustCompile(`(?i)^ALTER TABLE (\w+) `)
	addCheckRe    = regexp.MustCompile(`(?i)ADD CONSTRAINT (\w+) (CHECK|FOREIGN KEY)`)
	addIndexedRe  = regexp.MustCompile(`(?i)ADD CONSTRAINT \w+ (UNIQUE|PRIMARY KEY|EXCLUDE)|ADD (UNIQUE|PRIMARY KEY)`)
	validateRe    = regexp.MustCompile(`(?i)^ALTER TABLE (\w+) VALIDATE CONSTRAINT (\w+)$`)
	rewriteRe     = regexp.MustCompile(`(?i)ALTER COLUMN \w+ (?:SET DATA )?TYPE|ALTER COLUMN \w+ SET NOT NULL|SET (?:UNLOGGED|LOGGED)|SET TABLESPACE`)
	writeRe       = regexp.MustCompile(`(?i)^(?:UPDATE|DELETE FROM) (\w+)`)
)

// Every migration is safe to apply while daemons run: on a table an
// earlier migration created (one that may hold millions of rows) no Up
// statement holds a lock that stops reads or writes for longer than a
// catalog change. Indexes are built CONCURRENTLY (and dropped first, so
// that a build cut off can run again); constraints are added NOT VALID
// and validated apart; nothing rewrites or rescans a table under an
// exclusive lock; and a file that does any of it runs outside a
// transaction, where each statement holds its locks only while it runs.
func TestMigrationsAreOnlineSafe(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("*.sql")
	if err != nil || len(files) == 0 {
		t.Fatalf("no migrations (%v)", err)
	}
	for _, file := range files {
		for _, p := range onlineProblems(t, file) {
			t.Errorf("%s: %s", file, p)
		}
	}
}

// The check can fail: each of these breaks one of its rules.
func TestOnlineSafetyRulesCatch(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for name, sql := range map[string]string{
		"index":     "-- +goose Up\nCREATE INDEX tasks_x_idx ON tasks (kind);\n",
		"rerun":     "-- +goose NO TRANSACTION\n-- +goose Up\nCREATE INDEX CONCURRENTLY tasks_x_idx ON tasks (kind);\n",
		"intx":      "-- +goose Up\nDROP INDEX CONCURRENTLY IF EXISTS tasks_x_idx;\nCREATE INDEX CONCURRENTLY tasks_x_idx ON tasks (kind);\n",
		"check":     "-- +goose Up\nALTER TABLE tasks ADD CONSTRAINT x CHECK (attempt < 100);\n",
		"unchecked": "-- +goose NO TRANSACTION\n-- +goose Up\nALTER TABLE tasks ADD CONSTRAINT x CHECK (attempt < 100) NOT VALID;\n",
		"validate":  "-- +goose Up\nALTER TABLE tasks ADD CONSTRAINT x CHECK (attempt < 100) NOT VALID;\nALTER TABLE tasks VALIDATE CONSTRAINT x;\n",
		"type":      "-- +goose Up\nALTER TABLE tasks ALTER COLUMN kind TYPE varchar(64);\n",
		"notnull":   "-- +goose Up\nALTER TABLE ledger ALTER COLUMN note SET NOT NULL;\n",
		"unique":    "-- +goose Up\nALTER TABLE inbox ADD CONSTRAINT x UNIQUE (task_id);\n",
		"update":    "-- +goose Up\nUPDATE tasks SET priority = 0;\n",
	} {
		file := filepath.Join(dir, name+".sql")
		if err := os.WriteFile(file, []byte(sql), 0o644); err != nil {
			t.Fatal(err)
		}
		if ps := onlineProblems(t, file); len(ps) != 1 {
			t.Errorf("%s: %d problems, want 1: %q", name, len(ps), ps)
		}
	}
	ok := "-- +goose Up\nCREATE TABLE x (id int);\nCREATE INDEX x_idx ON x (id);\nALTER TABLE x ADD CONSTRAINT c CHECK (id > 0);\n" +
		"-- +goose Down\nDROP INDEX tasks_state_created_idx;\n"
	file := filepath.Join(dir, "ok.sql")
	if err := os.WriteFile(file, []byte(ok), 0o644); err != nil {
		t.Fatal(err)
	}
	if ps := onlineProblems(t, file); len(ps) != 0 {
		t.Errorf("a new table's own index and check, and a Down section: %q", ps)
	}
}

// onlineProblems lists what in file's Up section is not safe online.
func onlineProblems(t *testing.T, file string) []string {
	stmts, noTx := upStatements(t, file)
	var out []string
	bad := func(s, format string, args ...any) {
		out = append(out, fmt.Sprintf(format, args...)+fmt.Sprintf("\n\t%.120s", s))
	}
	created := map[string]bool{}
	validated := map[string]bool{}
	notValid := map[string]string{} // constraint → table
	needsNoTx, dropped := "", ""
	for _, s := range stmts {
		if m := createTableRe.FindStringSubmatch(s); m != nil {
			created[m[1]] = true
		}
		if m := dropIndexRe.FindStringSubmatch(s); m != nil {
			dropped = m[1]
			continue
		}
		m := createIndexRe.FindStringSubmatch(s)
		if m != nil && !created[m[3]] {
			switch {
			case m[1] == "":
				bad(s, "builds an index on %s, an existing table, without CONCURRENTLY: its writes wait for the build", m[3])
			case dropped != m[2]:
				bad(s, "builds %s CONCURRENTLY without DROP INDEX CONCURRENTLY IF EXISTS %s just before: a build cut off leaves an invalid index that a second run would trip on", m[2], m[2])
			}
		}
		if m != nil && m[1] != "" {
			needsNoTx = "CREATE INDEX CONCURRENTLY"
		}
		dropped = ""
		if m := validateRe.FindStringSubmatch(s); m != nil {
			validated[m[2]] = true
			needsNoTx = "VALIDATE CONSTRAINT"
			continue
		}
		if m := alterTableRe.FindStringSubmatch(s); m != nil && !created[m[1]] {
			for _, c := range addCheckRe.FindAllStringSubmatch(s, -1) {
				if !strings.HasSuffix(strings.ToUpper(s), " NOT VALID") {
					bad(s, "adds %s %s to %s, an existing table, without NOT VALID: the table is read under an exclusive lock", c[2], c[1], m[1])
					continue
				}
				notValid[c[1]] = m[1]
			}
			if addIndexedRe.MatchString(s) {
				bad(s, "adds a constraint that builds an index on %s under an exclusive lock: build a unique index CONCURRENTLY, then ADD CONSTRAINT … USING INDEX", m[1])
			}
			if r := rewriteRe.FindString(s); r != "" {
				bad(s, "%s on %s, an existing table, rewrites or reads it under an exclusive lock", r, m[1])
			}
		}
		if m := writeRe.FindStringSubmatch(s); m != nil && !created[m[1]] {
			needsNoTx = "a write to " + m[1]
		}
	}
	for c, table := range notValid {
		if !validated[c] {
			out = append(out, fmt.Sprintf("adds %s to %s NOT VALID but never validates it", c, table))
		}
	}
	if needsNoTx != "" && !noTx {
		out = append(out, needsNoTx+" in a transaction holds its locks until the whole migration commits: mark the file -- +goose NO TRANSACTION")
	}
	return out
}

// errNotWaiting is returned when the migration never waited.
var errNotWaiting = errors.New("the migration never waited for the open transaction")

// An index is built while the table's writers go on: with a transaction
// open on the table (a worker's, mid-write), the migration that indexes it
// waits for that transaction without stopping other writes, and finishes
// once it commits. A plain CREATE INDEX would queue its lock ahead of the
// second insert, which would then wait out its lock_timeout.
func TestIndexBuildsLetWritesThrough(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, c := range []struct {
		version int64
		table   string
		insert  string
	}{
		{7, "tasks", `INSERT INTO tasks (kind) VALUES ('noop')`},
		{18, "ledger", `INSERT INTO ledger (tenant, operation, effect_key, request_hash, class, task_id, generation,
			step_path, owner_token) VALUES ('default', 'op', md5(random()::text), '\x00', 'keyed', 1, 1, 's', 1)`},
	} {
		t.Run(fmt.Sprint(c.version), func(t *testing.T) {
			t.Parallel()
			url := testdb.Empty(t)
			pool := testdb.Open(t, url)
			if _, err := newMigrator(t, pool).UpTo(ctx, c.version-1); err != nil {
				t.Fatal(err)
			}
			open, err := pool.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer open.Rollback(ctx) //nolint:errcheck
			if _, err := open.Exec(ctx, c.insert); err != nil {
				t.Fatal(err)
			}

			done := make(chan error, 1)
			m := newMigrator(t, testdb.Open(t, url))
			go func() { _, err := m.UpTo(ctx, c.version); done <- err }()
			if err := awaitIndexBuildWaiting(ctx, t, url, done); err != nil {
				t.Fatal(err)
			}

			other := testdb.Open(t, url)
			if _, err := other.Exec(ctx, "SET lock_timeout = '20s'; "+c.insert); err != nil {
				t.Fatalf("an insert into %s while the index waits to build: %v", c.table, err)
			}
			if err := open.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			var invalid int
			if err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_index WHERE indrelid = $1::regclass AND NOT indisvalid`,
				c.table).Scan(&invalid); err != nil || invalid != 0 {
				t.Fatalf("%d invalid indexes on %s (%v)", invalid, c.table, err)
			}
		})
	}
}

// awaitIndexBuildWaiting returns once a CREATE INDEX of the database at
// url waits for a lock, or an error if the migration ends first.
func awaitIndexBuildWaiting(ctx context.Context, t *testing.T, url string, done <-chan error) error {
	watch := testdb.Open(t, url)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		var waiting bool
		if err := watch.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock' AND query ILIKE '%CREATE%INDEX%')`).Scan(&waiting); err != nil {
			return err
		}
		if waiting {
			return nil
		}
		select {
		case err := <-done:
			return fmt.Errorf("%w (it ended: %v)", errNotWaiting, err)
		case <-tick.C:
		}
	}
}
