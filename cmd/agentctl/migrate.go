package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/spf13/cobra"

	"github.com/agentledger/agentledger/migrations"
)

func (a *app) migrateCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "migrate up|down|status",
		Short: "Apply, roll back or list schema migrations",
		Long: `Manage agentledger's schema. agentd applies pending migrations when it
starts; migrate up does the same without starting a daemon. Migrations take an
advisory lock, so running them while daemons start is safe.`,
		Args: cobra.NoArgs,
		RunE: a.action(func(context.Context, []string) error {
			return usagef("migrate needs a subcommand: up, down or status")
		}),
	}
	cmd.AddCommand(a.migrateUpCmd(), a.migrateDownCmd(), a.migrateStatusCmd())
	return cmd
}

func (a *app) migrateUpCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "up",
		Short: "Apply every pending migration",
		Long: `Apply every pending migration, as agentd does when it starts. With the
embedded PostgreSQL, a --state-dir with no cluster gets a new one (the only
agentctl command that makes one), and agentctl says so.`,
		Args: cobra.NoArgs,
		RunE: a.action(func(ctx context.Context, _ []string) error { return a.migrateUp(ctx) }),
	}
}

func (a *app) migrateDownCmd() *cobra.Command {
	var (
		to  int64
		yes bool
	)
	cmd := &cobra.Command{
		Use:   "down --yes [--to VERSION]",
		Short: "Roll back the last migration (or all above --to)",
		Long: `Roll back the last applied migration, or with --to every migration above
that version (--to 0 rolls back everything). Rolling back drops tables and the
data in them, so it needs --yes; without it, migrate down says what it would
roll back and exits 2.`,
		Example: `  agentctl migrate down --yes
  agentctl migrate down --to 0 --yes`,
		Args: cobra.NoArgs,
	}
	cmd.RunE = a.action(func(ctx context.Context, _ []string) error {
		target := int64(-1) // the version below the last applied one
		if cmd.Flags().Changed("to") {
			if to < 0 {
				return usagef("--to must be a version (0 or more), not %d", to)
			}
			target = to
		}
		return a.migrateDown(ctx, target, yes)
	})
	cmd.Flags().Int64Var(&to, "to", 0, "roll back every migration above this version")
	cmd.Flags().BoolVar(&yes, "yes", false, "confirm: rolling back destroys data")
	return cmd
}

func (a *app) migrateStatusCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "status",
		Short: "List migrations and the schema version",
		Args:  cobra.NoArgs,
		RunE:  a.action(func(ctx context.Context, _ []string) error { return a.migrateStatus(ctx) }),
	}
}

// migrator opens the database and a migrator over it. Close it when done.
func (a *app) migrator(ctx context.Context) (*migrations.Migrator, error) {
	db, err := a.open(ctx)
	if err != nil {
		return nil, err
	}
	return migrations.New(db.Pool, nil)
}

// upResult is migrate up's JSON output.
type upResult struct {
	Applied []int64 `json:"applied"`
	Version int64   `json:"version"`
}

func (a *app) migrateUp(ctx context.Context) error {
	a.create = true // sets a database up: the embedded cluster too, if there is none
	m, err := a.migrator(ctx)
	if err != nil {
		return err
	}
	defer m.Close()
	st, err := m.Status(ctx)
	if err != nil {
		return err
	}
	applied, err := m.Up(ctx)
	if err != nil {
		return err
	}
	v, err := m.Version(ctx)
	if err != nil {
		return err
	}
	if a.wantJSON() {
		return printJSON(a.stdout, upResult{Applied: applied, Version: v})
	}
	if len(applied) == 0 {
		if v > m.Latest() {
			_, err := fmt.Fprintf(a.stdout, "nothing to apply: the database is at version %d, newer than this agentctl knows (%d)\n", v, m.Latest())
			return err
		}
		_, err := fmt.Fprintf(a.stdout, "already up to date (version %d)\n", v)
		return err
	}
	for _, ver := range applied {
		fmt.Fprintf(a.stdout, "applied %s\n", describe(st, ver))
	}
	_, err = fmt.Fprintf(a.stdout, "database is at version %d\n", v)
	return err
}

// downResult is migrate down's JSON output.
type downResult struct {
	RolledBack []int64 `json:"rolled_back"`
	Version    int64   `json:"version"`
}

// migrateDown rolls back every applied migration above target; a negative
// target means the last applied migration only.
func (a *app) migrateDown(ctx context.Context, target int64, yes bool) error {
	m, err := a.migrator(ctx)
	if err != nil {
		return err
	}
	defer m.Close()
	st, err := m.Status(ctx)
	if err != nil {
		return err
	}
	var applied []int64 // ascending
	for _, s := range st {
		if s.Applied {
			applied = append(applied, s.Version)
		}
	}
	if v, err := m.Version(ctx); err == nil && v > m.Latest() {
		return withHint(newError(fmt.Sprintf("migrate down: the database is at version %d, newer than this agentctl knows (%d), "+
			"whose down migrations it does not have", v, m.Latest()), nil), "use the agentctl of the release that migrated it")
	}
	current := int64(0)
	if n := len(applied); n > 0 {
		current = applied[n-1]
		if target < 0 {
			target = 0
			if n > 1 {
				target = applied[n-2]
			}
		}
	}
	var undo []string
	for i := len(applied) - 1; i >= 0 && applied[i] > target; i-- {
		undo = append(undo, describe(st, applied[i]))
	}
	if len(undo) == 0 {
		if a.wantJSON() {
			return printJSON(a.stdout, downResult{RolledBack: []int64{}, Version: current})
		}
		_, err := fmt.Fprintf(a.stdout, "nothing to roll back (database is at version %d)\n", current)
		return err
	}
	if !yes {
		return withHint(usagef("migrate down would roll back %s, dropping tables and the data in them",
			strings.Join(undo, ", ")), "re-run with --yes to proceed")
	}
	rolled, err := m.DownTo(ctx, target)
	var refusal *pgconn.PgError
	var guard *migrations.GuardError
	switch {
	case errors.As(err, &guard) && errors.As(err, &refusal) && refusal.Code == "55000":
		// A guard refused before anything was rolled back.
		err = newError(fmt.Sprintf("migrate down refused by version %d, nothing rolled back: %s", guard.Version, refusal.Message), err)
		if refusal.Hint != "" {
			err = withHint(err, refusal.Hint)
		}
	case errors.As(err, &guard):
		err = newError(fmt.Sprintf("migrate down: checking version %d's guard failed, nothing rolled back: %v", guard.Version, guard.Err), err)
	case errors.As(err, &refusal) && refusal.Code == "55000":
		// A down migration that refuses (00042: tasks or daemons whose
		// keys are scoped) stops there; what it said is the reason, not
		// goose's "partial migration".
		v, _ := m.Version(ctx)
		err = newError(fmt.Sprintf("migrate down stopped at version %d: %s", v, refusal.Message), err)
		if refusal.Hint != "" {
			err = withHint(err, refusal.Hint)
		}
	}
	if err != nil {
		return err
	}
	v, err := m.Version(ctx)
	if err != nil {
		return err
	}
	if a.wantJSON() {
		return printJSON(a.stdout, downResult{RolledBack: rolled, Version: v})
	}
	for _, ver := range rolled {
		fmt.Fprintf(a.stdout, "rolled back %s\n", describe(st, ver))
	}
	_, err = fmt.Fprintf(a.stdout, "database is at version %d\n", v)
	return err
}

// migrationStatus is one migration in migrate status's JSON output.
type migrationStatus struct {
	Version   int64      `json:"version"`
	Name      string     `json:"name"`
	Applied   bool       `json:"applied"`
	AppliedAt *time.Time `json:"applied_at,omitempty"`
}

// statusResult is migrate status's JSON output.
type statusResult struct {
	Version    int64             `json:"version"`
	Latest     int64             `json:"latest"`
	Migrations []migrationStatus `json:"migrations"`
}

func (a *app) migrateStatus(ctx context.Context) error {
	m, err := a.migrator(ctx)
	if err != nil {
		return err
	}
	defer m.Close()
	st, err := m.Status(ctx)
	if err != nil {
		return err
	}
	v, err := m.Version(ctx)
	if err != nil {
		return err
	}
	res := statusResult{Version: v, Latest: m.Latest(), Migrations: []migrationStatus{}}
	for _, s := range st {
		ms := migrationStatus{Version: s.Version, Name: s.Name, Applied: s.Applied}
		if s.Applied {
			at := s.AppliedAt
			ms.AppliedAt = &at
		}
		res.Migrations = append(res.Migrations, ms)
	}
	if a.wantJSON() {
		return printJSON(a.stdout, res)
	}
	return printStatus(a.stdout, a.db.String(), res)
}

// printStatus writes migrate status for people.
func printStatus(w io.Writer, db string, res statusResult) error {
	t := newTable(w, "VERSION", "NAME", "APPLIED AT")
	pending := 0
	for _, m := range res.Migrations {
		at := "pending"
		if m.AppliedAt != nil {
			at = stamp(*m.AppliedAt)
		} else {
			pending++
		}
		t.row(strconv.FormatInt(m.Version, 10), m.Name, at)
	}
	if err := t.flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "database: %s\n", db)
	var err error
	switch {
	case res.Version > res.Latest:
		// A newer release migrated it: this one knows no migration to
		// roll back, and its daemon refuses the schema.
		_, err = fmt.Fprintf(w, "version %d: newer than this agentctl knows (%d); use the agentctl of the release that migrated it\n",
			res.Version, res.Latest)
	case pending == 0:
		_, err = fmt.Fprintf(w, "version %d of %d: up to date\n", res.Version, res.Latest)
	default:
		_, err = fmt.Fprintf(w, "version %d of %d: %d pending, run `agentctl migrate up`\n", res.Version, res.Latest, pending)
	}
	return err
}

// describe names a migration version for messages: "version 1 (00001_tasks.sql)".
func describe(st []migrations.Status, v int64) string {
	for _, s := range st {
		if s.Version == v {
			return fmt.Sprintf("version %d (%s)", v, s.Name)
		}
	}
	return fmt.Sprintf("version %d", v)
}
