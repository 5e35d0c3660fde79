package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/tenants"
)

func (a *app) tenantShareCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "share set|list|rm",
		Short: "Manage the tenants' shares of the claim: weights and caps on running tasks",
		Long: `When several tenants have due tasks in a queue, every claim round gives each
of them a part of its batch in proportion to its weight (default 1), so one
tenant's backlog never holds another's new task back by more than a round;
what a tenant with fewer due tasks leaves goes to the others. A tenant's cap
(--max-running) bounds its running tasks across the fleet: no claim of any
daemon leases more.

Daemons read the shares at every claim. agentd's [[tenant_share]] tables are
stored when it starts, replacing the shares a config file set, never one
set here: an operator's share stands (the daemon logs how its file
differs). share rm leaves the tenant at weight 1 and no cap until a
daemon whose file has a share for it starts again and stores it.`,
		Args: cobra.NoArgs,
		RunE: a.action(func(context.Context, []string) error {
			return usagef("tenant share needs a subcommand: set, list or rm")
		}),
	}
	cmd.AddCommand(a.tenantShareSetCmd(), a.tenantShareListCmd(), a.tenantShareRmCmd())
	return cmd
}

func (a *app) tenantShareSetCmd() *cobra.Command {
	var weight, maxRunning int
	cmd := &cobra.Command{
		Use:   "set TENANT [--weight N] [--max-running N]",
		Short: "Set a tenant's weight and cap, replacing its share",
		Long: `Set TENANT's share of the claim, replacing any: --weight (1-10000, default 1)
and --max-running (at least 1; left out, no cap). TENANT is default (the
operator's tenant: agentctl, cron and webhooks) or a tenant of agentctl
tenant list.

With --output json it prints the share stored.`,
		Example: `  agentctl tenant share set acme --weight 3 --max-running 20
  agentctl tenant share set default --weight 2`,
		Args: tenantArgs(1, "one tenant name"),
	}
	cmd.RunE = a.action(func(ctx context.Context, args []string) error {
		fl := cmd.Flags()
		if !fl.Changed("weight") && !fl.Changed("max-running") {
			return usagef("say what to set: --weight, --max-running or both (agentctl tenant share rm %s restores weight 1 and no cap)", args[0])
		}
		s := tenants.Share{Tenant: args[0], Weight: weight, Source: tenants.SourceOperator}
		if fl.Changed("max-running") {
			s.MaxRunning = &maxRunning
		}
		return a.tenantShareSet(ctx, s, fl.Changed("weight"))
	})
	cmd.Flags().IntVar(&weight, "weight", tenants.DefaultWeight, "shares of a claim round when several tenants have due tasks (1-10000)")
	cmd.Flags().IntVar(&maxRunning, "max-running", 0, "most tasks running across the fleet at once (at least 1; left out: no cap)")
	return cmd
}

func (a *app) tenantShareListCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List the tenants' weights, caps and running tasks",
		Long: `List by name the operator's tenant, every tenant, and any other tenant with
a stored share or running tasks: its weight, its cap (MAX RUNNING, - for
none), how many of its tasks run now across the fleet, and where its share
was set (SOURCE: operator, config, or - for none stored).

With --output json it prints an array.`,
		Args: cobra.NoArgs,
		RunE: a.action(func(ctx context.Context, _ []string) error { return a.tenantShareList(ctx) }),
	}
}

func (a *app) tenantShareRmCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "rm TENANT",
		Aliases: []string{"remove"},
		Short:   "Remove a tenant's share: weight 1, no cap",
		Long: `Remove TENANT's stored share: it has weight 1 and no cap again. A share in
agentd's config file comes back when a daemon with that file starts again
(removing an operator's share hands the tenant back to the config file).`,
		Args: tenantArgs(1, "one tenant name"),
		RunE: a.action(func(ctx context.Context, args []string) error { return a.tenantShareRemove(ctx, args[0]) }),
	}
}

// shareFlag names the flag of a share's invalid field.
func shareFlag(err error) error {
	var ie *agentledger.InvalidError
	if !errors.As(err, &ie) {
		return err
	}
	switch ie.Field {
	case "weight":
		return agentledger.Invalid("--weight", "%s", ie.Problem)
	case "max_running":
		return agentledger.Invalid("--max-running", "%s", ie.Problem)
	case "tenant":
		return agentledger.Invalid("tenant name", "%s", ie.Problem)
	}
	return err
}

func (a *app) tenantShareSet(ctx context.Context, s tenants.Share, weightGiven bool) error {
	if err := s.Check(); err != nil { // before connecting: bad input changes nothing
		return shareFlag(err)
	}
	st, err := a.tenantStore(ctx)
	if err != nil {
		return err
	}
	was, had, err := st.ShareOf(ctx, s.Tenant)
	if err != nil {
		return err
	}
	got, err := st.PutShare(ctx, s)
	switch {
	case errors.Is(err, agentledger.ErrNotFound):
		return tenantNotFound(s.Tenant, err)
	case err != nil:
		return shareFlag(err)
	}
	if tenants.NewCap(was, had, got) {
		// A claim under way as the cap committed may have leased the
		// tenant's tasks as uncapped: they count once it has ended.
		if err := claims.New(a.db.Pool).SettleCaps(ctx, []string{got.Tenant}); err != nil {
			return fmt.Errorf("the cap is stored, but the tasks leased as it was set may not count towards it: %w", err)
		}
	}
	if a.wantJSON() {
		return printJSON(a.stdout, got)
	}
	_, err = fmt.Fprintf(a.stdout, "tenant %s: weight %d, %s%s\n", got.Tenant, got.Weight, capText(got.MaxRunning), shareDropped(was, had, got, weightGiven))
	return err
}

// shareDropped says what of the share that was a set replaced without
// it being given again, as limit set does: a part not given is not kept,
// which an operator changing one part would not expect.
func shareDropped(was tenants.Share, had bool, got tenants.Share, weightGiven bool) string {
	if !had || got.Source != tenants.SourceOperator {
		return ""
	}
	var gone []string
	if was.MaxRunning != nil && got.MaxRunning == nil {
		gone = append(gone, fmt.Sprintf("at most %d running (--max-running %d keeps it)", *was.MaxRunning, *was.MaxRunning))
	}
	if !weightGiven && was.Weight != got.Weight {
		gone = append(gone, fmt.Sprintf("weight %d (--weight %d keeps it)", was.Weight, was.Weight))
	}
	if len(gone) == 0 {
		return ""
	}
	return "; no longer " + strings.Join(gone, ", nor ") + ": a part not given again is not kept"
}

// capText says what a cap allows.
func capText(maxRunning *int) string {
	if maxRunning == nil {
		return "no cap on running tasks"
	}
	return fmt.Sprintf("at most %d running", *maxRunning)
}

func (a *app) tenantShareList(ctx context.Context) error {
	svc, err := a.operator(ctx)
	if err != nil {
		return err
	}
	rows, err := svc.Shares(ctx)
	if err != nil {
		return err
	}
	if a.wantJSON() {
		return printJSON(a.stdout, rows)
	}
	t := newTable(a.stdout, "TENANT", "WEIGHT", "MAX RUNNING", "RUNNING", "SOURCE", "UPDATED")
	for _, r := range rows {
		maxRunning, source, updated := "-", "-", "-"
		if r.MaxRunning != nil {
			maxRunning = strconv.Itoa(*r.MaxRunning)
		}
		if r.Source != nil {
			source, updated = *r.Source, stamp(*r.UpdatedAt)
		}
		t.row(r.Tenant, strconv.Itoa(r.Weight), maxRunning, strconv.FormatInt(r.Running, 10), source, updated)
	}
	return t.flush()
}

func (a *app) tenantShareRemove(ctx context.Context, tenant string) error {
	st, err := a.tenantStore(ctx)
	if err != nil {
		return err
	}
	got, err := st.DeleteShare(ctx, tenant)
	if errors.Is(err, agentledger.ErrNotFound) {
		return withHint(newError(fmt.Sprintf("tenant %q has no share stored", tenant), err),
			"agentctl tenant share list shows the shares")
	}
	if err != nil {
		return err
	}
	if a.wantJSON() {
		return printJSON(a.stdout, struct {
			Tenant  string `json:"tenant"`
			Removed bool   `json:"removed"`
		}{got.Tenant, true})
	}
	_, err = fmt.Fprintf(a.stdout, "share of tenant %s removed: weight 1, no cap on running tasks\n", got.Tenant)
	return err
}
