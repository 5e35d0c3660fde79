package main

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentledger/agentledger/grants"
	"github.com/agentledger/agentledger/tenants"
)

// grantFlags are what tenant grant adds and tenant revoke takes away.
type grantFlags struct {
	all                              bool
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
	fl.StringSliceVar(&f.kinds, "kind", nil, verb+" kinds it may submit (none listed: every kind)")
	fl.StringSliceVar(&f.tools, "tool", nil, verb+" tools its tasks may call: http_request, notify, shop/charge, shop/*")
	fl.StringSliceVar(&f.hosts, "host", nil, verb+" hosts the HTTP tools may reach: https://api.example.com, http://127.0.0.1:8080")
	fl.StringSliceVar(&f.secretHosts, "host-with-secrets", nil, verb+" hosts reached with the operator's secret headers for them")
	fl.StringSliceVar(&f.channels, "channel", nil, verb+" Slack channels notify may post to")
	fl.StringSliceVar(&f.models, "model", nil, verb+" models agent tasks may ask (* for the configured one)")
	if verb == "grant" {
		fl.Int64Var(&f.maxTokens, "max-tokens", 0, "tokens one agent task may spend (0: no bound)")
		fl.Int16Var(&f.priorityFloor, "priority-floor", 0, "the most urgent priority its API submissions get (0-100, lower runs first)")
	}
}

func (f *grantFlags) empty() bool {
	return !f.all && len(f.kinds)+len(f.tools)+len(f.hosts)+len(f.secretHosts)+len(f.channels)+len(f.models) == 0 &&
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

The grant is checked where each effect is performed and again on every
replay: a call outside it records and performs nothing and fails the task,
naming what is missing. A host is scheme://host[:port]; the operator's secret
headers for a host go with a tenant's requests only through
--host-with-secrets.

With --output json it prints the grant stored.`,
		Example: `  agentctl tenant grant acme --tool http_request --host https://api.example.com
  agentctl tenant grant acme --tool notify --channel acme-alerts
  agentctl tenant grant acme --model gpt-4o-mini --max-tokens 20000 --tool shop/*`,
		Args: tenantArgs(1, "one tenant name"),
	}
	cmd.RunE = a.action(func(ctx context.Context, args []string) error {
		f.maxTokensSet = cmd.Flags().Changed("max-tokens")
		f.priorityFloorSet = cmd.Flags().Changed("priority-floor")
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
everything (the tenant is left with no tool, no model, and no kind limit).
Tasks see the change from their next attempt: a replay of a finished task
then refuses an effect no longer granted, and performs nothing.

With --output json it prints the grant stored.`,
		Example: `  agentctl tenant revoke acme --host https://api.example.com
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
		Long:  `Show TENANT's grant, or the default one it has without a grant. With --output json it prints the grant.`,
		Args:  tenantArgs(1, "one tenant name"),
		RunE: a.action(func(ctx context.Context, args []string) error {
			db, err := a.open(ctx)
			if err != nil {
				return err
			}
			if err := a.checkSchema(ctx, db); err != nil {
				return err
			}
			g, stored, err := grants.NewStore(db.Pool).Get(ctx, args[0])
			if err != nil {
				return err
			}
			if !stored {
				g = grants.Default(args[0])
			}
			return a.printGrant(args[0], g, stored)
		}),
	}
}

func (a *app) tenantGrant(ctx context.Context, tenant string, f *grantFlags, add bool) error {
	if f.empty() {
		return usagef("say what to %s: --tool, --host, --channel, --model, --kind, --all…", map[bool]string{true: "grant", false: "revoke"}[add])
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
	g, err := grants.NewStore(db.Pool).Update(ctx, tenant, func(g *grants.Grant) {
		if add {
			f.addTo(g)
		} else {
			f.takeFrom(g)
		}
	})
	if err != nil {
		return err
	}
	return a.printGrant(tenant, g, true)
}

func (f *grantFlags) addTo(g *grants.Grant) {
	if f.all {
		g.All = true
	}
	g.Kinds = union(g.Kinds, f.kinds)
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

func (f *grantFlags) takeFrom(g *grants.Grant) {
	if f.all {
		*g = grants.Grant{}
		return
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

func (a *app) printGrant(tenant string, g *grants.Grant, stored bool) error {
	if a.wantJSON() {
		return printJSON(a.stdout, g)
	}
	w := a.stdout
	src := "stored grant"
	if !stored {
		src = "no grant stored: the default"
	}
	fmt.Fprintf(w, "tenant %s (%s)\n", tenant, src)
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
	fmt.Fprintf(w, "  kinds:    %s\n", list(g.Kinds, "every kind"))
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
