package main

import (
	"context"
	"fmt"
	"io"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/agentledger/agentledger/notify/outbox"
	"github.com/agentledger/agentledger/operator"
)

func (a *app) notificationsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "notifications",
		Short: "Deliver failed notifications again",
		Long: `A notification that Slack refused for good (a wrong or revoked token, an
unknown channel, an app not in the channel) is given up: agentctl show lists
it as failed, with Slack's error. Once the cause is fixed, redeliver sends it
again.`,
	}
	cmd.AddCommand(a.redeliverCmd())
	return cmd
}

func (a *app) redeliverCmd() *cobra.Command {
	var (
		tenant      string
		all, dryRun bool
		yes         bool
	)
	cmd := &cobra.Command{
		Use:   "redeliver (ID | --all) [--dry-run]",
		Short: "Send a task's failed notifications again, or every failed one",
		Long: `Redeliver sends the failed notifications of task ID (of every generation),
or with --all every failed notification, again: the running daemons'
dispatchers deliver them within a poll, oldest first, under the same ledger
keys as before. So there is still one Slack message per task generation and
rule: the first notification posts the message (after looking for an
earlier post in the channel, should one have landed), later ones update it
in place, and one whose message was posted is updated rather than posted
again.

Fix the cause first (the token, the channel, the app's membership): a
notification that fails again is given up again. --dry-run lists what would
be sent, and how, and changes nothing. --all sends at most 1000, oldest
first (run it again for more) and asks for confirmation unless --yes.`,
		Example: `  agentctl notifications redeliver 42 --dry-run
  agentctl notifications redeliver 42
  agentctl notifications redeliver --all --yes`,
		Args: func(cmd *cobra.Command, args []string) error {
			switch {
			case all && len(args) > 0:
				return usagef("%s --all takes no task ID: give a task ID or --all, not both", commandName(cmd))
			case all:
				return nil
			case yes:
				return usagef("--yes applies only with --all")
			}
			return oneID(cmd, args)
		},
		RunE: a.action(func(ctx context.Context, args []string) error {
			p := operator.RedeliverParams{Tenant: tenant, All: all}
			if !all {
				id, err := parseID(args[0])
				if err != nil {
					return err
				}
				p.TaskID = id
			}
			return a.redeliver(ctx, p, dryRun, yes)
		}),
	}
	tenantFlag(cmd, &tenant, "only that tenant's tasks")
	fl := cmd.Flags()
	fl.BoolVar(&all, "all", false, "every failed notification instead of one task's")
	fl.BoolVar(&dryRun, "dry-run", false, "list what would be sent and how; change nothing")
	fl.BoolVar(&yes, "yes", false, "with --all: do not ask for confirmation (needed when standard input is not a terminal)")
	return cmd
}

// redelivery is redeliver's JSON output.
type redelivery struct {
	DryRun bool `json:"dry_run"`
	*operator.Redelivery
}

func (a *app) redeliver(ctx context.Context, p operator.RedeliverParams, dryRun, yes bool) error {
	svc, err := a.operator(ctx)
	if err != nil {
		return err
	}
	plan, err := svc.PreviewRedelivery(ctx, p)
	if err != nil {
		return err
	}
	n := int64(len(plan.Notifications))
	if !dryRun && n > 0 && p.All && !yes {
		question := fmt.Sprintf("Send %s again?", plural(n, "failed notification"))
		if err := a.confirm(question, "notifications redeliver --all", "redelivered"); err != nil {
			return err
		}
	}
	if !dryRun && n > 0 {
		if plan, err = svc.Redeliver(ctx, p); err != nil {
			return err
		}
		n = int64(len(plan.Notifications))
	}
	if a.wantJSON() {
		return printJSON(a.stdout, redelivery{DryRun: dryRun, Redelivery: plan})
	}
	return printRedelivery(a.stdout, p, plan, dryRun)
}

// printRedelivery writes what a redelivery sends, or would, for people.
func printRedelivery(w io.Writer, p operator.RedeliverParams, r *operator.Redelivery, dryRun bool) error {
	n := int64(len(r.Notifications))
	if n == 0 {
		what := "no failed notifications"
		if !p.All {
			what += " for task " + strconv.FormatInt(p.TaskID, 10)
		}
		_, err := fmt.Fprintln(w, what+": nothing to send")
		return err
	}
	if dryRun {
		fmt.Fprintf(w, "%s would be sent again:\n", plural(n, "failed notification"))
	} else {
		fmt.Fprintf(w, "%s queued to be sent again:\n", plural(n, "failed notification"))
	}
	tab := newTable(w, "TASK", "ID", "GEN", "EVENT", "RULE/STEP", "CHANNEL", "FAILURES", "LAST ERROR", "SENDS")
	for _, x := range r.Notifications {
		source := x.Rule
		if source == "" {
			source = x.Step
		}
		tab.row(strconv.FormatInt(x.TaskID, 10), strconv.FormatInt(x.ID, 10), strconv.Itoa(int(x.Generation)), x.Event,
			source, x.Channel, strconv.Itoa(int(x.Failures)), truncate(orDash(x.LastError), 60), x.Plan.String())
	}
	if err := tab.flush(); err != nil {
		return err
	}
	var err error
	switch {
	case dryRun:
		_, err = fmt.Fprintln(w, "dry run: nothing changed")
	case n == outbox.MaxFailedBatch:
		_, err = fmt.Fprintf(w, "the daemons deliver them within a poll; %d is the most one call sends: run it again for more\n", n)
	default:
		_, err = fmt.Fprintln(w, "the daemons deliver them within a poll; agentctl show lists how each went")
	}
	return err
}
