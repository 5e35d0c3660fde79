package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/agentledger/agentledger/internal/cliflags"
	"github.com/agentledger/agentledger/internal/version"

	"github.com/spf13/cobra"

	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/database"
	"github.com/agentledger/agentledger/grants"
	"github.com/agentledger/agentledger/migrations"
	"github.com/agentledger/agentledger/pgembed"
	"github.com/agentledger/agentledger/registry"
)

// app is one invocation of agentctl: its streams, the global flags and the
// database, opened on first use.
type app struct {
	stdin          io.Reader
	stdout, stderr io.Writer

	databaseURL string
	stateDir    string
	output      string

	db *database.DB
	// create lets the embedded cluster be initialised where there is
	// none: migrate up's, the one command that sets a database up.
	create bool
	// started is set when a command's own code begins: an error before
	// that is cobra rejecting the command line, a usage error.
	started bool
}

// run executes agentctl with args and returns its exit code.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	a := &app{stdin: stdin, stdout: stdout, stderr: stderr}
	root := a.rootCmd()
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	cmd, err := root.ExecuteContextC(ctx)
	if cerr := a.close(); cerr != nil {
		fmt.Fprintf(stderr, "agentctl: warning: closing the database: %v\n", cerr)
	}
	if err == nil {
		return 0
	}
	return a.report(cmd, err)
}

func (a *app) rootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:     "agentctl",
		Version: version.String(),
		Short:   "Manage agentledger tasks, notification rules and the schema",
		Long: `agentctl submits, lists, shows, cancels and retries agentledger tasks, looks
effects up in the ledger, lists the workers holding leases, approves and
denies the effects waiting for a person, manages the notification rules and
migrates the schema.

With no --database-url (or DATABASE_URL) it uses the embedded PostgreSQL
cluster that agentd uses, in --state-dir, starting it if needed and stopping
it again on exit when agentctl was its only user. A state directory with no
cluster is refused: agentd makes one on its first start (as does
agentctl migrate up).

Shell completion: agentctl completion bash|zsh|fish|powershell prints a
script; for example source <(agentctl completion bash), or see
agentctl completion bash --help.

Exit codes: 0 success, 1 operation failed (not found, conflict, key reuse,
database unreachable or not migrated), 2 usage or invalid input.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			switch {
			case a.output == "id" && !idOutput[cmd.CommandPath()]:
				return usagef("--output id is for submit and list (the task ids, one a line), approvals (the request ids), signal, signals and waits (theirs); %s takes table or json", commandName(cmd))
			case a.output != "table" && a.output != "json" && a.output != "id" && idOutput[cmd.CommandPath()]:
				return usagef("--output must be table, json or id, not %q", a.output)
			case a.output != "table" && a.output != "json" && a.output != "id":
				return usagef("--output must be table or json for %s, not %q", cmd.CommandPath(), a.output)
			}
			return nil
		},
	}
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error { return usageError(cliflags.Suggest(cmd, err)) })
	pf := root.PersistentFlags()
	pf.StringVar(&a.databaseURL, "database-url", "",
		"PostgreSQL URL (default $DATABASE_URL; with neither, the embedded cluster)")
	pf.StringVar(&a.stateDir, "state-dir", "",
		"state directory of the embedded cluster (default $"+pgembed.StateDirEnv+", else /var/lib/agentledger as root, ~/.local/state/agentledger otherwise)")
	pf.StringVarP(&a.output, "output", "o", "table", "output format: table or json; id (submit, list, approvals, signal, signals, waits) prints the ids alone, for scripts")
	_ = root.RegisterFlagCompletionFunc("output", cobra.FixedCompletions(
		[]string{"table", "json", "id"}, cobra.ShellCompDirectiveNoFileComp))

	root.AddCommand(a.submitCmd(), a.listCmd(), a.showCmd(), a.cancelCmd(), a.replayCmd(), a.rerunCmd(),
		a.resolveCmd(), a.compensateCmd(), a.ruleCmd(), a.migrateCmd(), a.advanceIDsCmd(), a.scopeKeysCmd())
	root.AddCommand(a.retryCmd(), a.ledgerCmd(), a.workersCmd(), a.waitCmd())
	root.AddCommand(a.scheduleCmd())
	root.AddCommand(a.limitCmd(), a.breakerCmd())
	root.AddCommand(a.tenantCmd())
	root.AddCommand(a.tuiCmd())
	root.AddCommand(a.notificationsCmd())
	root.AddCommand(a.approvalsCmd(), a.approvalCmd(), a.approveCmd(), a.denyCmd())
	root.AddCommand(a.signalCmd(), a.signalsCmd(), a.waitsCmd(), a.endWaitCmd())
	return root
}

// idOutput are the commands that take --output id.
var idOutput = map[string]bool{"agentctl submit": true, "agentctl list": true, "agentctl approvals": true,
	"agentctl signal": true, "agentctl signals": true, "agentctl waits": true}

// action adapts a command's body to cobra: it marks the start of the
// command's own work (see app.started) and passes the context.
func (a *app) action(fn func(ctx context.Context, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		a.started = true
		return fn(cmd.Context(), args)
	}
}

// tenantFlag adds --tenant to cmd, bound to p.
func tenantFlag(cmd *cobra.Command, p *string, help string) {
	cmd.Flags().StringVar(p, "tenant", "", help)
}

// open connects to the database on first use.
func (a *app) open(ctx context.Context) (*database.DB, error) {
	if a.db != nil {
		return a.db, nil
	}
	url := a.databaseURL
	if url == "" {
		url = os.Getenv("DATABASE_URL")
	}
	db, err := database.Open(ctx, database.Config{URL: url, StateDir: a.stateDir, MaxConns: 4, Logger: warnLog(a.stderr),
		MustExist: !a.create})
	var none *pgembed.NoClusterError
	if errors.As(err, &none) {
		return nil, withHint(err, fmt.Sprintf("agentd creates one on its first start there (or `%s` does); "+
			"to use another, pass its --state-dir or set $%s, or --database-url for an existing server",
			a.migrateUpLine(), pgembed.StateDirEnv))
	}
	if err != nil {
		hint := "is the server up and the URL right? Set it with --database-url or DATABASE_URL, " +
			"or unset both to use the embedded PostgreSQL"
		if url == "" {
			hint = "the embedded PostgreSQL lives in --state-dir ($" + pgembed.StateDirEnv +
				"); to use an existing server instead, set --database-url or DATABASE_URL"
		}
		return nil, withHint(err, hint)
	}
	switch {
	case db.Created():
		fmt.Fprintf(a.stderr, "agentctl: initialised a new embedded PostgreSQL cluster: %s\n", db)
	case db.Started():
		// No agentd runs on it: say which database this is, lest an
		// operator who meant a server of their own (DATABASE_URL unset in
		// this shell) read another's tasks without noticing.
		fmt.Fprintf(a.stderr, "agentctl: started the embedded PostgreSQL, no agentd running on it (set DATABASE_URL for a server of your own): %s\n", db)
	}
	a.db = db
	return db, nil
}

// store opens the database, checks that its schema is migrated and returns
// the task store over it.
func (a *app) store(ctx context.Context) (*claims.Store, error) {
	db, err := a.open(ctx)
	if err != nil {
		return nil, err
	}
	if err := a.checkSchema(ctx, db); err != nil {
		return nil, err
	}
	return claims.New(db.Pool), nil
}

// workerRegistry opens the database, checks its schema as store does, and
// returns its registry of worker pools and kinds.
func (a *app) workerRegistry(ctx context.Context) (*registry.Store, error) {
	db, err := a.open(ctx)
	if err != nil {
		return nil, err
	}
	if err := a.checkSchema(ctx, db); err != nil {
		return nil, err
	}
	return registry.New(db.Pool), nil
}

// notMigrated is the message for a database without agentledger's
// schema: no daemon has run on it, nor migrate up.
func (a *app) notMigrated() string {
	return fmt.Sprintf("database is not migrated (no agentd has started on it yet): run `%s` or start agentd", a.migrateUpLine())
}

// migrateUpLine is the migrate up command for the database this command
// line names: its --state-dir written out; a --database-url only named, as
// it may hold a password.
func (a *app) migrateUpLine() string {
	line := "agentctl"
	if a.databaseURL != "" {
		return line + " --database-url URL migrate up"
	}
	if a.stateDir != "" && os.Getenv("DATABASE_URL") == "" {
		line += " --state-dir " + grants.ShellQuote(a.stateDir)
	}
	return line + " migrate up"
}

// checkSchema fails unless every embedded migration is applied. It looks for
// the migrations table in the catalog first, because asking the migrator for
// the version of a database without one would create it.
func (a *app) checkSchema(ctx context.Context, db *database.DB) error {
	var exists bool
	if err := db.Pool.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, migrations.TableName).Scan(&exists); err != nil {
		return fmt.Errorf("checking the schema of %s: %w", db, err)
	}
	if !exists {
		return newError(a.notMigrated(), nil)
	}
	m, err := migrations.New(db.Pool, nil)
	if err != nil {
		return err
	}
	defer m.Close()
	v, err := m.Version(ctx)
	if err != nil {
		return fmt.Errorf("checking the schema of %s: %w", db, err)
	}
	switch latest := m.Latest(); {
	case v == 0:
		return newError(a.notMigrated(), nil)
	case v < latest:
		return newError(fmt.Sprintf("database schema is at version %d, agentctl needs %d: run `%s` or start agentd", v, latest, a.migrateUpLine()), nil)
	case v > latest:
		fmt.Fprintf(a.stderr, "agentctl: warning: database schema version %d is newer than this agentctl knows (%d); consider upgrading agentctl\n", v, latest)
	}
	return nil
}

// close closes the database, if open, and lets go of the embedded cluster.
func (a *app) close() error {
	if a.db == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := a.db.Close(ctx)
	a.db = nil
	return err
}

// parseID parses a task id argument.
func parseID(s string) (int64, error) {
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil || id <= 0 {
		return 0, usagef("task id must be a positive integer, not %q", s)
	}
	return id, nil
}

// oneID accepts exactly one argument, a task id (checked by parseID).
func oneID(cmd *cobra.Command, args []string) error {
	if len(args) != 1 {
		return usagef("%s takes one task ID, got %d arguments", commandName(cmd), len(args))
	}
	return nil
}

// commandName is cmd's path below agentctl ("retry", "tenant token
// create"), for a refusal that agentctl's own prefix already names.
func commandName(cmd *cobra.Command) string {
	return strings.TrimPrefix(cmd.CommandPath(), cmd.Root().Name()+" ")
}
