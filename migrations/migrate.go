package migrations

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"log/slog"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
)

//go:embed *.sql
var files embed.FS

// lockID is the advisory lock key all migrators agree on ("agentledger" in
// ASCII, folded into 63 bits).
const lockID int64 = 0x6167656e746c6564

// TableName is where applied versions are recorded.
const TableName = "agentledger_migrations"

// Status is one migration and whether it is applied.
type Status struct {
	Version   int64
	Name      string
	Applied   bool
	AppliedAt time.Time
}

// Migrator applies the embedded migrations to one database.
type Migrator struct {
	db       *sql.DB
	provider *goose.Provider
}

// New returns a Migrator that works through pool. Close it when done.
// Logger may be nil.
func New(pool *pgxpool.Pool, logger *slog.Logger) (*Migrator, error) {
	db := stdlib.OpenDBFromPool(pool)
	locker, err := lock.NewPostgresSessionLocker(lock.WithLockID(lockID))
	if err != nil {
		return nil, err
	}
	opts := []goose.ProviderOption{
		goose.WithSessionLocker(locker),
		goose.WithTableName(TableName),
		goose.WithDisableGlobalRegistry(true),
	}
	if logger != nil {
		opts = append(opts, goose.WithSlog(logger))
	}
	p, err := goose.NewProvider(goose.DialectPostgres, db, files, opts...)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("migrations: %w", err)
	}
	return &Migrator{db: db, provider: p}, nil
}

// Close releases the migrator's database handle (not the pool).
func (m *Migrator) Close() error { return m.db.Close() }

// MinServerVersion is the oldest PostgreSQL the migrations run on
// (server_version_num): they use CREATE OR REPLACE TRIGGER, new in 14.
const MinServerVersion = 140000

// checkServer refuses a server older than MinServerVersion before any
// migration runs, so that an old server gets a sentence, not a syntax
// error halfway through the migrations.
func (m *Migrator) checkServer(ctx context.Context) error {
	var num int
	var version string
	if err := m.db.QueryRowContext(ctx, `SELECT current_setting('server_version_num')::int, current_setting('server_version')`).Scan(&num, &version); err != nil {
		return fmt.Errorf("migrations: reading the server's version: %w", err)
	}
	return serverOldEnough(num, version)
}

func serverOldEnough(num int, version string) error {
	if num < MinServerVersion {
		return fmt.Errorf("migrations: agentledger needs PostgreSQL %d or newer; this server is %s", MinServerVersion/10000, version)
	}
	return nil
}

// Up applies every pending migration and returns the versions applied.
func (m *Migrator) Up(ctx context.Context) ([]int64, error) {
	if err := m.checkServer(ctx); err != nil {
		return nil, err
	}
	res, err := m.provider.Up(ctx)
	if err != nil {
		return nil, fmt.Errorf("migrations: up: %w", err)
	}
	return m.identify(ctx, versions(res))
}

// installationVersion makes the installation row (migration 00042), and
// installationTablesVersion records its tables (00043).
const (
	installationVersion       = 42
	installationTablesVersion = 43
)

// identify keeps the installation's identity true to the schema after a
// run that applied versions (migrations 00042 and 00043):
//   - a run that made the schema from nothing scopes the downstream keys
//     of every task (keys_scoped_from 0) under a new identity: no daemon
//     of an older release can have sent a key on it (00042 leaves an
//     existing database unscoped, for agentctl scope-keys);
//   - a tasks table made anew under a kept installation table (a schema
//     taken down to nothing and made again over more than one run) is
//     another database, whose ids start again: a new identity, unscoped;
//   - both tables made anew (a restore from a dump) keep the identity.
func (m *Migrator) identify(ctx context.Context, applied []int64) ([]int64, error) {
	v, err := m.Version(ctx)
	if err != nil || v < installationTablesVersion {
		return applied, err
	}
	if _, err := m.db.ExecContext(ctx, `UPDATE installation SET
		id = CASE WHEN own_table = 'installation'::regclass THEN gen_random_uuid() ELSE id END,
		keys_scoped_from = CASE WHEN own_table = 'installation'::regclass THEN NULL ELSE keys_scoped_from END,
		tasks_table = 'tasks'::regclass, own_table = 'installation'::regclass
		WHERE tasks_table IS DISTINCT FROM 'tasks'::regclass OR own_table IS DISTINCT FROM 'installation'::regclass`); err != nil {
		return applied, fmt.Errorf("migrations: the installation's tables: %w", err)
	}
	if !slices.Contains(applied, 1) || !slices.Contains(applied, installationVersion) {
		return applied, nil
	}
	// A new identity too: a schema taken down to nothing and made again
	// is a new database, whose task ids start again.
	if _, err := m.db.ExecContext(ctx, `UPDATE installation SET id = gen_random_uuid(), keys_scoped_from = 0`); err != nil {
		return applied, fmt.Errorf("migrations: scoping the downstream keys of a new database: %w", err)
	}
	return applied, nil
}

// UpTo applies the pending migrations up to version and returns the
// versions applied.
func (m *Migrator) UpTo(ctx context.Context, version int64) ([]int64, error) {
	if err := m.checkServer(ctx); err != nil {
		return nil, err
	}
	res, err := m.provider.UpTo(ctx, version)
	if err != nil {
		return nil, fmt.Errorf("migrations: up to %d: %w", version, err)
	}
	return m.identify(ctx, versions(res))
}

// DownTo rolls back every applied migration above version (0 = all).
func (m *Migrator) DownTo(ctx context.Context, version int64) ([]int64, error) {
	if err := m.checkGuards(ctx, version); err != nil {
		return nil, err
	}
	res, err := m.provider.DownTo(ctx, version)
	if err != nil {
		return nil, fmt.Errorf("migrations: down: %w", err)
	}
	return versions(res), nil
}

// GuardMark marks a down migration's guard: the statement that follows it
// (a DO block between StatementBegin and StatementEnd) only refuses, by
// raising. DownTo runs the guards of every migration it is to roll back
// before it rolls any back, each in a transaction it rolls back, so that a
// refusal leaves the schema whole rather than half-way down (daemons of
// the release keep running on it). The down migration runs it again in
// its turn: what changed between the check and the down (a task queued, a
// daemon started) is refused there, part-way, as before. A guard reads
// only what exists from its own version up.
const GuardMark = "-- +agentledger DownGuard"

// GuardError is a down migration's guard that refused, or could not be
// checked: nothing was rolled back. Err is the database's error (a
// *pgconn.PgError: 55000 for a guard's refusal).
type GuardError struct {
	Version int64
	Err     error
}

func (e *GuardError) Error() string {
	return fmt.Sprintf("migrations: down: version %d's guard: %v", e.Version, e.Err)
}

func (e *GuardError) Unwrap() error { return e.Err }

// checkGuards runs the guards (GuardMark) of the applied migrations above
// version, newest first.
func (m *Migrator) checkGuards(ctx context.Context, version int64) error {
	cur, err := m.Version(ctx)
	if err != nil {
		return err
	}
	srcs := m.provider.ListSources()
	for i := len(srcs) - 1; i >= 0; i-- {
		src := srcs[i]
		if src.Version <= version || src.Version > cur {
			continue
		}
		name := path.Base(src.Path)
		text, err := fs.ReadFile(files, name)
		if err != nil {
			return fmt.Errorf("migrations: %w", err)
		}
		gs, err := guards(name, string(text))
		if err != nil {
			return err
		}
		for _, g := range gs {
			tx, err := m.db.BeginTx(ctx, nil)
			if err != nil {
				return fmt.Errorf("migrations: down: %w", err)
			}
			_, err = tx.ExecContext(ctx, g)
			_ = tx.Rollback() // a guard changes nothing; were it to, nothing stays
			if err != nil {
				return &GuardError{Version: src.Version, Err: err}
			}
		}
	}
	return nil
}

// guards returns the statements of a migration file's down section that
// follow GuardMark, each on the line after it between StatementBegin and
// StatementEnd; a mark placed otherwise is an error (a guard that would
// not run before the down).
func guards(name, file string) ([]string, error) {
	up, down, _ := strings.Cut(file, "-- +goose Down")
	if strings.Contains(up, GuardMark) {
		return nil, fmt.Errorf("migrations: %s: %s outside a down section", name, GuardMark)
	}
	var out []string
	for {
		_, rest, ok := strings.Cut(down, GuardMark+"\n")
		if !ok {
			if strings.Contains(down, GuardMark) {
				return nil, fmt.Errorf("migrations: %s: %s must stand alone on its line", name, GuardMark)
			}
			return out, nil
		}
		body, ok := strings.CutPrefix(rest, "-- +goose StatementBegin\n")
		stmt, after, closed := strings.Cut(body, "-- +goose StatementEnd")
		if !ok || !closed {
			return nil, fmt.Errorf("migrations: %s: %s must be followed by a statement between StatementBegin and StatementEnd", name, GuardMark)
		}
		out = append(out, strings.TrimSpace(stmt))
		down = after
	}
}

// Version returns the highest applied version (0 when none). It reads the
// versions table plainly: goose's own read takes its session lock first
// (and creates the table), which a daemon's readiness check must not wait
// on, and which a transaction-pooling PgBouncer may take and release on two
// different server connections.
func (m *Migrator) Version(ctx context.Context) (int64, error) {
	var exists bool
	if err := m.db.QueryRowContext(ctx, `SELECT to_regclass($1) IS NOT NULL`, TableName).Scan(&exists); err != nil || !exists {
		if err != nil {
			return 0, fmt.Errorf("migrations: version: %w", err)
		}
		return 0, nil
	}
	var v sql.NullInt64
	if err := m.db.QueryRowContext(ctx, `SELECT max(version_id) FROM `+TableName).Scan(&v); err != nil {
		return 0, fmt.Errorf("migrations: version: %w", err)
	}
	return v.Int64, nil
}

// Latest returns the highest embedded version.
func (m *Migrator) Latest() int64 {
	src := m.provider.ListSources()
	if len(src) == 0 {
		return 0
	}
	return src[len(src)-1].Version
}

// Status lists every embedded migration and whether it is applied.
func (m *Migrator) Status(ctx context.Context) ([]Status, error) {
	st, err := m.provider.Status(ctx)
	if err != nil {
		return nil, fmt.Errorf("migrations: status: %w", err)
	}
	out := make([]Status, 0, len(st))
	for _, s := range st {
		out = append(out, Status{
			Version:   s.Source.Version,
			Name:      baseName(s.Source.Path),
			Applied:   s.State == goose.StateApplied,
			AppliedAt: s.AppliedAt,
		})
	}
	return out, nil
}

func versions(res []*goose.MigrationResult) []int64 {
	out := make([]int64, 0, len(res))
	for _, r := range res {
		out = append(out, r.Source.Version)
	}
	return out
}

func baseName(p string) string {
	for i := len(p) - 1; i >= 0; i-- {
		if p[i] == '/' {
			return p[i+1:]
		}
	}
	return p
}

// Fingerprint is a short hash of every embedded migration file: it changes
// whenever the schema does, so caches of migrated databases (test templates)
// know when they are stale.
func Fingerprint() string {
	h := sha256.New()
	entries, _ := fs.ReadDir(files, ".") // sorted by name; the embed cannot fail to list
	for _, e := range entries {
		b, _ := fs.ReadFile(files, e.Name())
		fmt.Fprintf(h, "%s\x00%d\x00", e.Name(), len(b))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))[:12]
}
