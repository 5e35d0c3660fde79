package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

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
