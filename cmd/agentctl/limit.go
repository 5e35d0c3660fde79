package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/flow"
)

func (a *app) limitCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "limit set|list|rm",
		Short: "Manage the fleet-wide rate limits",
		Long: `A rate limit paces the calls every daemon makes to one target, together: at
most N per second or per minute, after a burst of up to --burst calls at once.

A target is KIND:NAME:
  http:https://billing.internal:8080   an HTTP origin (scheme, host, port)
  mcp:shop                             an MCP server
  model:api.openai.com                 a model endpoint's host
  slack-channel:C0123ABCD              a Slack channel (ID or name)
  slack-workspace                      the Slack workspace
KIND:* (slack-channel:*) is the kind's default: every target of that kind
without a limit of its own gets it, each with its own budget.

Daemons read the limits every few seconds. agentd's [[limit]] tables are
stored when it starts, replacing those targets' limits.`,
		Args: cobra.NoArgs,
		RunE: a.action(func(context.Context, []string) error {
			return usagef("limit needs a subcommand: set, list or rm")
		}),
	}
	cmd.AddCommand(a.limitSetCmd(), a.limitListCmd(), a.limitRmCmd())
	return cmd
}

func (a *app) limitSetCmd() *cobra.Command {
	var rate string
	var burst int
	cmd := &cobra.Command{
		Use:   "set TARGET --rate N/s|N/min [--burst N]",
		Short: "Set a target's rate limit",
		Long: `Set TARGET's rate limit, replacing any.

With --output json it prints the limit stored.`,
		Example: `  agentctl limit set slack-channel:* --rate 1/s
  agentctl limit set http:https://billing.internal:8080 --rate 600/min --burst 10
  agentctl limit set model:api.openai.com --rate 60/min`,
		Args: oneTarget,
		RunE: a.action(func(ctx context.Context, args []string) error { return a.limitSet(ctx, args[0], rate, burst) }),
	}
	cmd.Flags().StringVar(&rate, "rate", "", "calls allowed: N/s or N/min (required)")
	cmd.Flags().IntVar(&burst, "burst", 1, "calls allowed at once before the rate applies (at least 1)")
	_ = cmd.MarkFlagRequired("rate")
	return cmd
}

func (a *app) limitListCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List the rate limits",
		Long: `List the rate limits by target. SOURCE is operator (agentctl limit set) or
config (agentd's config file).

With --output json it prints an array of limits.`,
		Args: cobra.NoArgs,
		RunE: a.action(func(ctx context.Context, _ []string) error { return a.limitList(ctx) }),
	}
}

func (a *app) limitRmCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "rm TARGET",
		Aliases: []string{"remove"},
		Short:   "Remove a target's rate limit",
		Long: `Remove TARGET's own rate limit: its calls follow its kind's default, if any,
or are not limited. A limit from agentd's config file comes back when agentd
starts again.`,
		Args: oneTarget,
		RunE: a.action(func(ctx context.Context, args []string) error { return a.limitRemove(ctx, args[0]) }),
	}
}

// oneTarget accepts exactly one argument, a target.
func oneTarget(cmd *cobra.Command, args []string) error {
	if len(args) != 1 {
		return usagef("%s takes one target, got %d arguments", cmd.CommandPath(), len(args))
	}
	return nil
}

// limits opens the database, checks that its schema is migrated and
// returns the limits in it.
func (a *app) limits(ctx context.Context) (*flow.Store, error) {
	db, err := a.open(ctx)
	if err != nil {
		return nil, err
	}
	if err := a.checkSchema(ctx, db); err != nil {
		return nil, err
	}
	return flow.NewStore(db.Pool), nil
}

// flagError names the flag of an invalid field: --rate, --burst.
func flagError(err error) error {
	var ie *agentledger.InvalidError
	if errors.As(err, &ie) && ie.Field != "target" {
		return agentledger.Invalid("--"+ie.Field, "%s", ie.Problem)
	}
	return err
}

func (a *app) limitSet(ctx context.Context, target, rate string, burst int) error {
	r, err := flow.ParseRate(rate)
	if err != nil {
		return flagError(err)
	}
	l := flow.Limit{Target: target, Rate: r, Burst: burst, Source: flow.SourceOperator}
	if burst < 1 {
		return agentledger.Invalid("--burst", "%d must be at least 1", burst)
	}
	if err := l.Check(); err != nil { // before connecting: bad input changes nothing
		return flagError(err)
	}
	limits, err := a.limits(ctx)
	if err != nil {
		return err
	}
	got, err := limits.Put(ctx, l)
	if err != nil {
		return flagError(err)
	}
	if _, kind, _ := flow.ParseTarget(got.Target); !enforced(kind) {
		fmt.Fprintf(a.stderr, "agentctl: note: limits on %s targets are stored but not enforced yet: "+
			"today the fleet paces Slack's channels and workspace and HTTP origins only\n", kind)
	}
	if a.wantJSON() {
		return printJSON(a.stdout, got)
	}
	_, err = fmt.Fprintf(a.stdout, "limit %s set: %s, burst %d\n", got.Target, got.Rate, got.Burst)
	return err
}

// enforced reports whether daemons obey limits of targets of kind yet.
func enforced(kind string) bool {
	return kind == flow.KindSlackChannel || kind == flow.KindSlackWorkspace || kind == flow.KindHTTP
}

func (a *app) limitList(ctx context.Context) error {
	limits, err := a.limits(ctx)
	if err != nil {
		return err
	}
	ls, err := limits.List(ctx)
	if err != nil {
		return err
	}
	if a.wantJSON() {
		if ls == nil {
			ls = []flow.Limit{}
		}
		return printJSON(a.stdout, ls)
	}
	if len(ls) == 0 {
		_, err := fmt.Fprintln(a.stderr, "no rate limits")
		return err
	}
	t := newTable(a.stdout, "TARGET", "RATE", "BURST", "SOURCE", "UPDATED")
	for _, l := range ls {
		t.row(l.Target, l.Rate.String(), fmt.Sprint(l.Burst), l.Source, stamp(l.UpdatedAt))
	}
	return t.flush()
}

func (a *app) limitRemove(ctx context.Context, target string) error {
	target, _, err := flow.ParseTarget(target)
	if err != nil {
		return err
	}
	limits, err := a.limits(ctx)
	if err != nil {
		return err
	}
	err = limits.Delete(ctx, target)
	if errors.Is(err, agentledger.ErrNotFound) {
		return withHint(newError(fmt.Sprintf("no limit for %s", target), err),
			"agentctl limit list shows the limits")
	}
	if err != nil {
		return err
	}
	if a.wantJSON() {
		return printJSON(a.stdout, struct {
			Target  string `json:"target"`
			Removed bool   `json:"removed"`
		}{target, true})
	}
	_, err = fmt.Fprintf(a.stdout, "limit %s removed\n", target)
	return err
}
