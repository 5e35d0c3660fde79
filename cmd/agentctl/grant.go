package main

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/grants"
	"github.com/agentledger/agentledger/tenants"
)

// grantFlags are what tenant grant adds and tenant revoke takes away.
type grantFlags struct {
	all, allKinds, reset             bool
	kinds, tools, hosts, secretHosts []string
	channels, models                 []string
	maxTokens                        int64
	maxTokensSet                     bool
	priorityFloor                    int16
	priorityFloorSet                 bool
}

func (f *grantFlags) register(cmd *cobra.Command, verb string) {
	fl := cmd.Flags()
	fl.BoolVar(&f.all, "all", false, verb+" everything (the operator's grant)")
	fl.BoolVar(&f.allKinds, "all-kinds", false, verb+" every kind (revoke: it may then submit none)")
	fl.StringSliceVar(&f.kinds, "kind", nil, verb+" kinds it may submit, by name"+
		map[string]string{"grant": " (the first replaces every kind)", "revoke": ""}[verb])
	fl.StringSliceVar(&f.tools, "tool", nil, verb+" tools its tasks may call: http_request, notify, shop/charge, shop/*")
	fl.StringSliceVar(&f.hosts, "host", nil, verb+" hosts the HTTP tools may reach: https://api.example.com, http://127.0.0.1:8080")
	fl.StringSliceVar(&f.secretHosts, "host-with-secrets", nil, verb+" hosts reached with the operator's secret headers for them")
	fl.StringSliceVar(&f.channels, "channel", nil, verb+" Slack channels notify may post to")
	fl.StringSliceVar(&f.models, "model", nil, verb+" models agent tasks may ask (* for the configured one)")
	if verb == "grant" {
		fl.Int64Var(&f.maxTokens, "max-tokens", 0, "tokens one agent task may spend (0: no bound)")
		fl.Int16Var(&f.priorityFloor, "priority-floor", 0, "the most urgent priority its API submissions get (0-100, lower runs first)")
		fl.BoolVar(&f.reset, "reset", false, "forget the stored grant: the default one holds until a daemon whose config file grants the tenant starts")
	}
}

func (f *grantFlags) empty() bool {
	return !f.all && !f.allKinds && len(f.kinds)+len(f.tools)+len(f.hosts)+len(f.secretHosts)+len(f.channels)+len(f.models) == 0 &&
		!f.maxTokensSet && !f.priorityFloorSet
}

func (a *app) tenantGrantCmd() *cobra.Command {
	var f grantFlags
	cmd := &cobra.Command{
		Use:   "grant TENANT [flags]",
		Short: "Let a tenant's tasks reach kinds, tools, hosts, channels and models",
		Long: `Add to what TENANT's tasks may reach. A tenant of the HTTP API starts with no
grant: it may submit every kind, but its tasks may call no tool and no model.
The operator's tenant, default (agentctl, cron, webhooks), may reach
everything until a grant of its own is stored.

Kinds: a tenant may submit every kind (--all-kinds, the default) or the kinds
named with --kind, not both. The first --kind replaces every kind with the
kinds named; later ones add to them; --all-kinds replaces them with every
kind again. tenant revoke takes kinds away; revoking the last one leaves
none, never every kind.

The grant is checked where each effect is performed and again on every
replay: a call outside it records and performs nothing and fails the task,
naming what is missing. A host is scheme://host[:port]; the operator's secret
headers for a host go with a tenant's requests only through
--host-with-secrets.

A grant changed here is the operator's: agentd's config file ([grant.TENANT])
never replaces it when a daemon starts (the daemon logs how its file
differs). --reset forgets the stored grant, handing it back to the config
file: the tenant has the default grant until a daemon whose file grants it
starts, and only that grant if none does.

With --output json it prints the grant stored.`,
		Example: `  agentctl tenant grant acme --tool http_request --host https://api.example.com
  agentctl tenant grant acme --tool notify --channel acme-alerts
  agentctl tenant grant acme --model gpt-4o-mini --max-tokens 20000 --tool shop/*
  agentctl tenant grant acme --kind steps,echo     # only these kinds from now on
  agentctl tenant grant acme --reset               # back to the config file's grant`,
		Args: tenantArgs(1, "one tenant name"),
	}
	cmd.RunE = a.action(func(ctx context.Context, args []string) error {
		f.maxTokensSet = cmd.Flags().Changed("max-tokens")
		f.priorityFloorSet = cmd.Flags().Changed("priority-floor")
		if f.reset {
			if !f.empty() {
				return usagef("--reset forgets the whole stored grant: give it alone")
			}
			return a.tenantGrantReset(ctx, args[0])
		}
		return a.tenantGrant(ctx, args[0], &f, true)
	})
	f.register(cmd, "grant")
	return cmd
}

func (a *app) tenantRevokeCmd() *cobra.Command {
	var f grantFlags
	cmd := &cobra.Command{
		Use:   "revoke TENANT [flags]",
		Short: "Take back part or all of a tenant's grant",
		Long: `Take back from TENANT's grant what the flags name; --all takes back
everything (the tenant is left with no kind, no tool and no model).
Revoking the last kind named, or --all-kinds, leaves the tenant no kind to
submit. A tenant that may submit every kind has no kind to take back by
name: grant it the kinds it keeps (tenant grant --kind), which replaces
every kind.

Tasks see the change from their next attempt: a replay of a finished task
then refuses an effect no longer granted, and performs nothing. The grant
is the operator's from then on: agentd's config file never replaces it when
a daemon starts (see tenant grant --reset).

With --output json it prints the grant stored.`,
		Example: `  agentctl tenant revoke acme --host https://api.example.com
  agentctl tenant revoke acme --kind steps
  agentctl tenant revoke acme --all`,
		Args: tenantArgs(1, "one tenant name"),
		RunE: a.action(func(ctx context.Context, args []string) error { return a.tenantGrant(ctx, args[0], &f, false) }),
	}
	f.register(cmd, "revoke")
	return cmd
}

func (a *app) tenantShowCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "show TENANT",
		Short: "Show what a tenant's tasks may reach",
		Long: `Show TENANT's grant, or the default one it has without a grant, and who set
it: an operator (agentctl tenant grant or revoke; a daemon's config file
never replaces it), a daemon's config file (its [grant.TENANT] table, stored
when it started; the next start stores the file's again), or unknown (stored
before agentledger recorded it; a config file granting the tenant replaces
it). With --output json it prints the grant.`,
		Args: tenantArgs(1, "one tenant name"),
		RunE: a.action(func(ctx context.Context, args []string) error {
			db, err := a.open(ctx)
			if err != nil {
				return err
			}
			if err := a.checkSchema(ctx, db); err != nil {
				return err
			}
			r, err := grants.NewStore(db.Pool).Record(ctx, args[0])
			if err != nil {
				return err
			}
			return a.printGrant(args[0], r)
		}),
	}
}

func (a *app) tenantGrant(ctx context.Context, tenant string, f *grantFlags, add bool) error {
	verb := map[bool]string{true: "grant", false: "revoke"}[add]
	switch {
	case f.empty():
		return usagef("say what to %s: --tool, --host, --channel, --model, --kind, --all-kinds, --all…", verb)
	case f.allKinds && len(f.kinds) > 0:
		return usagef("--all-kinds and --kind: %s every kind, or the kinds named, not both", verb)
	case slices.Contains(f.kinds, grants.AllKindsWord):
		return agentledger.Invalid("--kind", "%q is not a kind to name: --all-kinds is every kind", grants.AllKindsWord)
	}
	if err := tenants.CheckName(tenant); err != nil {
		return invalidAs(err, "tenant name")
	}
	for _, h := range append(slices.Clone(f.hosts), f.secretHosts...) {
		if _, err := grants.ParseHost(h); err != nil {
			return invalidAs(err, "--host")
		}
	}
	db, err := a.open(ctx)
	if err != nil {
		return err
	}
	if err := a.checkSchema(ctx, db); err != nil {
		return err
	}
	store := grants.NewStore(db.Pool)
	if _, err := store.Change(ctx, tenant, func(g *grants.Grant) error {
		if add {
			f.addTo(g)
			return nil
		}
		return f.takeFrom(tenant, g)
	}); err != nil {
		return err
	}
	r, err := store.Record(ctx, tenant)
	if err != nil {
		return err
	}
	return a.printGrant(tenant, r)
}

// tenantGrantReset deletes tenant's stored grant.
func (a *app) tenantGrantReset(ctx context.Context, tenant string) error {
	if err := tenants.CheckName(tenant); err != nil {
		return invalidAs(err, "tenant name")
	}
	db, err := a.open(ctx)
	if err != nil {
		return err
	}
	if err := a.checkSchema(ctx, db); err != nil {
		return err
	}
	gone, err := grants.NewStore(db.Pool).Delete(ctx, tenant)
	if err != nil {
		return err
	}
	if a.wantJSON() {
		return printJSON(a.stdout, struct {
			Tenant string `json:"tenant"`
			Reset  bool   `json:"reset"`
		}{tenant, gone})
	}
	if !gone {
		_, err = fmt.Fprintf(a.stdout, "tenant %s has no grant stored: it has the default one\n", tenant)
		return err
	}
	_, err = fmt.Fprintf(a.stdout, "grant of tenant %s forgotten: it has the default one until a daemon whose config file grants it starts\n", tenant)
	return err
}

func (f *grantFlags) addTo(g *grants.Grant) {
	if f.all {
		g.All = true
	}
	switch {
	case f.allKinds:
		g.AllKinds, g.Kinds = true, nil
	case len(f.kinds) > 0:
		g.AllKinds = false // the kinds named replace every kind
		g.Kinds = union(g.Kinds, f.kinds)
	}
	g.Tools = union(g.Tools, f.tools)
	g.Channels = union(g.Channels, f.channels)
	g.Models = union(g.Models, f.models)
	for _, h := range f.hosts {
		g.Hosts = putHost(g.Hosts, grants.Host{URL: h})
	}
	for _, h := range f.secretHosts {
		g.Hosts = putHost(g.Hosts, grants.Host{URL: h, SecretHeaders: true})
	}
	if f.maxTokensSet {
		g.MaxTokens = f.maxTokens
	}
	if f.priorityFloorSet {
		g.PriorityFloor = f.priorityFloor
	}
}

// takeFrom takes the flags' parts from g; it refuses a kind named from a
// grant of every kind, which has no "every kind but this one".
func (f *grantFlags) takeFrom(tenant string, g *grants.Grant) error {
	if f.all {
		*g = grants.Grant{}
		return nil
	}
	switch {
	case f.allKinds:
		g.AllKinds, g.Kinds = false, nil
	case len(f.kinds) > 0 && g.AllKinds && !g.All:
		return withHint(agentledger.Invalid("--kind", "tenant %q may submit every kind: there is no kind to take back by name", tenant),
			fmt.Sprintf("grant it the kinds it keeps instead (agentctl tenant grant %s --kind …), which replaces every kind; --all-kinds takes every kind back", tenant))
	}
	g.Kinds = minus(g.Kinds, f.kinds)
	g.Tools = minus(g.Tools, f.tools)
	g.Channels = minus(g.Channels, f.channels)
	g.Models = minus(g.Models, f.models)
	for _, h := range f.hosts {
		g.Hosts = dropHost(g.Hosts, h)
	}
	for _, h := range f.secretHosts { // the host stays, without the secrets
		for i := range g.Hosts {
			if sameHost(g.Hosts[i].URL, h) {
				g.Hosts[i].SecretHeaders = false
			}
		}
	}
	return nil
}

func union(have, add []string) []string {
	for _, v := range add {
		if !slices.Contains(have, v) {
			have = append(have, v)
		}
	}
	return have
}

func minus(have, drop []string) []string {
	return slices.DeleteFunc(have, func(v string) bool { return slices.Contains(drop, v) })
}

func sameHost(a, b string) bool {
	ua, erra := grants.ParseHost(a)
	ub, errb := grants.ParseHost(b)
	return erra == nil && errb == nil && grants.Origin(ua) == grants.Origin(ub)
}

func putHost(hs []grants.Host, h grants.Host) []grants.Host {
	for i := range hs {
		if sameHost(hs[i].URL, h.URL) {
			hs[i].SecretHeaders = hs[i].SecretHeaders || h.SecretHeaders
			return hs
		}
	}
	return append(hs, h)
}

func dropHost(hs []grants.Host, url string) []grants.Host {
	return slices.DeleteFunc(hs, func(h grants.Host) bool { return sameHost(h.URL, url) })
}

// printGrant prints tenant's stored grant r, or its default one when r is
// nil, and who set it.
func (a *app) printGrant(tenant string, r *grants.Record) error {
	g := grants.Default(tenant)
	if r != nil {
		g = r.Grant
	}
	if a.wantJSON() {
		return printJSON(a.stdout, g)
	}
	w := a.stdout
	if r == nil {
		fmt.Fprintf(w, "tenant %s (no grant stored: the default)\n", tenant)
	} else {
		fmt.Fprintf(w, "tenant %s (stored grant)\n", tenant)
		fmt.Fprintf(w, "  set by:   %s\n", setByText(tenant, r))
	}
	if g.All {
		_, err := fmt.Fprintln(w, "  everything (the operator's grant)")
		return err
	}
	list := func(l []string, none string) string {
		if len(l) == 0 {
			return none
		}
		return strings.Join(l, ", ")
	}
	kinds := list(g.Kinds, "no kind")
	if g.AllKinds {
		kinds = "every kind"
	}
	fmt.Fprintf(w, "  kinds:    %s\n", kinds)
	fmt.Fprintf(w, "  tools:    %s\n", list(g.Tools, "none"))
	hosts := make([]string, len(g.Hosts))
	for i, h := range g.Hosts {
		hosts[i] = h.URL
		if h.SecretHeaders {
			hosts[i] += " (with secret headers)"
		}
	}
	fmt.Fprintf(w, "  hosts:    %s\n", list(hosts, "none"))
	fmt.Fprintf(w, "  channels: %s\n", list(g.Channels, "none"))
	models := list(g.Models, "none")
	if g.MaxTokens > 0 {
		models += fmt.Sprintf(" (at most %d tokens a task)", g.MaxTokens)
	}
	fmt.Fprintf(w, "  models:   %s\n", models)
	if g.PriorityFloor > 0 {
		fmt.Fprintf(w, "  priority: %d at the most urgent\n", g.PriorityFloor)
	}
	return nil
}

// setByText says who set a stored grant, when, and whether a daemon's
// config file may replace it.
func setByText(tenant string, r *grants.Record) string {
	switch r.SetBy {
	case grants.SetByOperator:
		return "an operator (agentctl) at " + stamp(r.UpdatedAt) + "; config files never replace it (tenant grant " + tenant + " --reset hands it back)"
	case grants.SetByConfig:
		return "a daemon's config file ([grant." + tenant + "]) at " + stamp(r.UpdatedAt) + "; the next start stores the file's again"
	}
	return "unknown (stored before agentledger recorded it) at " + stamp(r.UpdatedAt) + "; a config file granting " + tenant + " replaces it"
}
