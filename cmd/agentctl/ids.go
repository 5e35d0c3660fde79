package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/cobra"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/database"
)

func (a *app) advanceIDsCmd() *cobra.Command {
	var yes bool
	cmd := &cobra.Command{
		Use:   "advance-ids --yes",
		Short: "Move every id sequence on, past any id issued before (after a restore)",
		Long: `Move every id sequence (tasks, approvals, signals, waits, the ledger's,
the outbox's) on to the server's clock in microseconds since 1970, or past
its last value if that is higher, so that no id issued before is issued
again. Ids leave the database: a task's id enters the keys of its effects,
which downstream services keep. A restore sets the sequences back, and a
new task would then carry the keys of a task that was lost with the
commits after the backup.

agentd does this by itself when its database is another than it recorded:
on another timeline (a promoted standby, a point-in-time restore), another
server, or restored from a dump. Run it by hand after restoring a copy of
a stopped cluster's directory (the embedded cluster's state directory),
which the check cannot tell from the original, before starting the
daemons. Ids only grow: running it needlessly costs nothing but larger
ids.`,
		Example: `  agentctl advance-ids --yes`,
		Args:    cobra.NoArgs,
	}
	cmd.RunE = a.action(func(ctx context.Context, _ []string) error {
		if !yes {
			return withHint(usagef("advance-ids would move every id sequence on, past any id issued before"),
				"re-run with --yes to proceed")
		}
		db, err := a.open(ctx)
		if err != nil {
			return err
		}
		if err := a.checkSchema(ctx, db); err != nil {
			return err
		}
		next, err := database.AdvanceIDs(ctx, db.Pool)
		if err != nil {
			return err
		}
		if a.wantJSON() {
			return printJSON(a.stdout, struct {
				NextTaskID int64 `json:"next_task_id"`
			}{next})
		}
		_, err = fmt.Fprintf(a.stdout, "ids advanced: the next task is %d\n", next)
		return err
	})
	cmd.Flags().BoolVar(&yes, "yes", false, "confirm")
	return cmd
}

func (a *app) scopeKeysCmd() *cobra.Command {
	var yes bool
	cmd := &cobra.Command{
		Use:   "scope-keys --yes",
		Short: "Make the Idempotency-Keys sent downstream carry this database's identity",
		Long: `Make the downstream keys (Idempotency-Key, a Slack message's metadata) of
the effects of every task submitted from now on carry this database's
identity (al2- keys): two databases number their tasks alike, and without it
a provider both call — staging and production on one account, two regions,
a database rebuilt from nothing — is sent the same key for their own task 5,
and may answer the second with the first's charge.

A database whose schema this release's migrations made is scoped already.
One upgraded from an older release is not (agentd warns of it at start):
daemons of that release may still be at work, and a keyed call of a task
may have gone out under its unscoped key and be sent again by its next
attempt; so the tasks already submitted keep their keys, and only later
ones are scoped. Every agentd reads the scope once, at its first effect: once the
upgrade is done, stop them all (a stopped daemon counts as live for a
minute after its last announcement), run this, start them again. It
refuses while a daemon is live. Running it again changes nothing. From
then on, run no older release on the database: it would send unscoped
keys.`,
		Example: `  agentctl scope-keys --yes`,
		Args:    cobra.NoArgs,
	}
	cmd.RunE = a.action(func(ctx context.Context, _ []string) error {
		if !yes {
			return withHint(usagef("scope-keys would change the downstream keys of the tasks submitted from now on, unless they are scoped already"),
				"stop every agentd, then re-run with --yes")
		}
		reg, err := a.workerRegistry(ctx)
		if err != nil {
			return err
		}
		// Scoped already, nothing to do, whatever runs; else no daemon may
		// be live: one would keep the unscoped keys it read.
		var scoped bool
		if err := a.db.Pool.QueryRow(ctx, `SELECT keys_scoped_from IS NOT NULL FROM installation`).Scan(&scoped); err != nil {
			return err
		}
		live, err := reg.LiveWorkers(ctx)
		if err != nil {
			return err
		}
		if len(live) > 0 && !scoped {
			ids := make([]string, len(live))
			for i, w := range live {
				ids[i] = w.ID
			}
			pools := "worker pools are"
			if len(live) == 1 {
				pools = "worker pool is"
			}
			return withHint(newError(fmt.Sprintf("%d %s live (%s): each reads the key scope once, at its first effect",
				len(live), pools, strings.Join(ids, ", ")), agentledger.ErrConflict),
				"stop every agentd and run this again; a stopped daemon counts as live for a minute after its last announcement")
		}
		id, from, already, err := scopeKeys(ctx, a.db.Pool)
		if err != nil {
			return err
		}
		if a.wantJSON() {
			return printJSON(a.stdout, struct {
				Installation string `json:"installation"`
				ScopedFrom   int64  `json:"scoped_from_task"`
				Already      bool   `json:"already"`
			}{id, from, already})
		}
		if already {
			_, err = fmt.Fprintf(a.stdout, "downstream keys are scoped already: tasks from %d on carry installation %s\n", from, id)
			return err
		}
		_, err = fmt.Fprintf(a.stdout, "downstream keys scoped: tasks from %d on carry installation %s; tasks before keep theirs. Start the daemons.\n", from, id)
		return err
	})
	cmd.Flags().BoolVar(&yes, "yes", false, "confirm")
	return cmd
}

// scopeKeys scopes the downstream keys of the tasks from the next id on,
// unless they are scoped already, under the installation row's lock (two
// at once: the second finds it done); it returns the installation, the
// first scoped task id and whether it was so before.
func scopeKeys(ctx context.Context, db *pgxpool.Pool) (id string, from int64, already bool, err error) {
	err = pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		var was *int64
		if err := tx.QueryRow(ctx, `SELECT id::text, keys_scoped_from FROM installation FOR UPDATE`).Scan(&id, &was); err != nil {
			return err
		}
		if was != nil {
			from, already = *was, true
			return nil
		}
		return tx.QueryRow(ctx, `UPDATE installation SET keys_scoped_from = nextval(pg_get_serial_sequence('tasks', 'id'))
			RETURNING keys_scoped_from`).Scan(&from)
	})
	return id, from, already, err
}
