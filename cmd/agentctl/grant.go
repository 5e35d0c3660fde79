package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/database"
	"github.com/agentledger/agentledger/grants"
	"github.com/agentledger/agentledger/registry"
	"github.com/agentledger/agentledger/tenants"
)

// grantFlags are what tenant grant adds and tenant revoke takes away.
type grantFlags struct {
	all, allKinds, reset, decide     bool
	kinds, tools, hosts, secretHosts []string
	channels, models                 []string
	approveTools, approveHosts       []string
	approveChannels                  []string
	maxTokens                        int64
	maxTokensSet                     bool
	priorityFloor                    int16
	priorityFloorSet                 bool
}

func (f *grantFlags) register(cmd *cobra.Command, verb string) {
	fl := cmd.Flags()
	fl.BoolVar(&f.all, "all", false, map[string]string{
		"grant":  "grant everything: every kind, tool, host (with its secret headers), channel and model",
		"revoke": "take back everything: no kind, tool, host, channel or model is left"}[verb])
	fl.BoolVar(&f.allKinds, "all-kinds", false, map[string]string{
		"grant":  "grant every kind (replaces the kinds named)",
		"revoke": "take back every kind: it may then submit none"}[verb])
	fl.StringSliceVar(&f.kinds, "kind", nil, verb+" kinds it may submit, by name"+
		map[string]string{"grant": " (the first replaces every kind)", "revoke": ""}[verb])
	fl.StringSliceVar(&f.tools, "tool", nil, verb+" tools its tasks may call: http_request, notify, shop/charge, shop/*")
	fl.StringSliceVar(&f.hosts, "host", nil, verb+" hosts the HTTP tools may reach: https://api.example.com, http://127.0.0.1:8080")
	fl.StringSliceVar(&f.secretHosts, "host-with-secrets", nil, verb+" hosts reached with the operator's secret headers for them")
	fl.StringSliceVar(&f.channels, "channel", nil, verb+" Slack channels notify may post to")
	fl.StringSliceVar(&f.models, "model", nil, verb+" models agent tasks may ask (* for the configured one)")
	fl.StringSliceVar(&f.approveTools, "approve-tool", nil, verb+" a person's approval before each call of the tools named (refund, shop/*)")
	fl.StringSliceVar(&f.approveHosts, "approve-host", nil, verb+" a person's approval before each HTTP call to the hosts named (https://pay.example.com)")
	fl.StringSliceVar(&f.approveChannels, "approve-channel", nil, verb+" a person's approval before each notify post to the channels named")
	fl.BoolVar(&f.decide, "decide", false, map[string]string{
		"grant":  "let its API tokens approve and deny its own tasks' approval requests",
		"revoke": "take back deciding its tasks' approval requests"}[verb])
	if verb == "grant" {
		fl.Int64Var(&f.maxTokens, "max-tokens", 0, "tokens one agent task may spend (0: no bound)")
		fl.Int16Var(&f.priorityFloor, "priority-floor", 0,
			"the most urgent priority its tasks get, submitted through the API or created by its tasks (0-100, lower runs first)")
		fl.BoolVar(&f.reset, "reset", false,
			"hand the stored grant to the config file: in force as it is until a daemon whose config file grants the tenant starts")
	}
}

func (f *grantFlags) empty() bool {
	return !f.all && !f.allKinds && !f.decide && len(f.kinds)+len(f.tools)+len(f.hosts)+len(f.secretHosts)+len(f.channels)+len(f.models)+
		len(f.approveTools)+len(f.approveHosts)+len(f.approveChannels) == 0 &&
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

--decide lets the tenant's API tokens approve and deny the approval requests
of its own tasks (POST /v1/approvals/{id}/approve and /deny); without it the
API refuses them (403). Operators decide with agentctl approve and deny.

TENANT is default or a tenant of agentctl tenant list (or one whose grant
a daemon's config file stored before it was created): any other name is
refused, so that a mistyped name never stores a grant.

A grant changed here is the operator's: agentd's config file ([grant.TENANT])
never replaces it when a daemon starts (the daemon logs how its file
differs). --reset hands the grant to the config file without changing it:
it stays in force, nothing widens, and the next start of a daemon whose
file has [grant.TENANT] replaces it with the file's; if no daemon's file
names the tenant, it stays as it is.

With --output json it prints the grant stored, who set it and when.`,
		Example: `  agentctl tenant grant acme --tool http_request --host https://api.example.com
  agentctl tenant grant acme --tool notify --channel acme-alerts
  agentctl tenant grant acme --model gpt-4o-mini --max-tokens 20000 --tool shop/*
  agentctl tenant grant acme --kind steps,echo     # only these kinds from now on
  agentctl tenant grant acme --decide              # its API tokens answer its approval requests
  agentctl tenant grant acme --reset               # the config file's from the next start`,
		Args: tenantArgs(1, "one tenant name"),
	}
	cmd.RunE = a.action(func(ctx context.Context, args []string) error {
		f.maxTokensSet = cmd.Flags().Changed("max-tokens")
		f.priorityFloorSet = cmd.Flags().Changed("priority-floor")
		if f.reset {
			if !f.empty() {
				return usagef("--reset hands the whole stored grant to the config file: give it alone")
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

Tasks see the change at their next effect, within seconds in every daemon:
a running task's next step, tool call or model call is checked against
the grant then in force, and a replay of a finished task refuses an effect
no longer granted, and performs nothing. The grant is the operator's from
then on: agentd's config file never replaces it when a daemon starts (see
tenant grant --reset). TENANT must be one tenant grant accepts: a mistyped
name is refused, never stored.

With --output json it prints the grant stored, who set it and when.`,
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
it and when: an operator (agentctl tenant grant or revoke; a daemon's config
file never replaces it), the config file (a daemon's [grant.TENANT] table,
stored when it started, or handed to it by tenant grant --reset; the next
start of a daemon whose file grants the tenant replaces it), or unknown
(stored before agentledger recorded who set grants; a config file that
differs leaves it in force, one that is the same makes it the file's).
TENANT must be one tenant grant accepts. With --output json it prints the
grant with set_by (operator, config, unknown, or null when none is stored)
and updated_at. For people it also says whether the tenant is disabled,
and its share (weight, cap on running tasks).`,
		Args: tenantArgs(1, "one tenant name"),
		RunE: a.action(func(ctx context.Context, args []string) error {
			db, err := a.open(ctx)
			if err != nil {
				return err
			}
			if err := a.checkSchema(ctx, db); err != nil {
				return err
			}
			r, err := a.knownTenant(ctx, db, args[0])
			if err != nil {
				return err
			}
			if err := a.printGrant(args[0], r); err != nil || a.wantJSON() {
				return err
			}
			return a.printTenantState(ctx, db, args[0])
		}),
	}
}

// printTenantState adds to tenant show what else bounds the tenant's
// tasks: whether it is disabled (tenant disable) and its share (tenant
// share set), so that one command says it all.
func (a *app) printTenantState(ctx context.Context, db *database.DB, tenant string) error {
	st := tenants.NewStore(db.Pool)
	t, ok, err := st.Tenant(ctx, tenant)
	if err != nil {
		return err
	}
	if ok && t.DisabledAt != nil {
		fmt.Fprintf(a.stdout, "  disabled: since %s: its API tokens are refused; its tasks are left as they are (agentctl tenant enable %s)\n",
			stamp(*t.DisabledAt), tenant)
	}
	sh, ok, err := st.ShareOf(ctx, tenant)
	if err != nil || !ok {
		return err
	}
	share := fmt.Sprintf("weight %d", sh.Weight)
	if sh.MaxRunning != nil {
		share += fmt.Sprintf(", at most %d running at once", *sh.MaxRunning)
	}
	_, err = fmt.Fprintf(a.stdout, "  share:    %s (set by %s)\n", share, sh.Source)
	return err
}

func (a *app) tenantGrant(ctx context.Context, tenant string, f *grantFlags, add bool) error {
	verb := map[bool]string{true: "grant", false: "revoke"}[add]
	switch {
	case f.empty():
		return usagef("say what to %s: --tool, --host, --channel, --model, --kind, --all-kinds, --decide, --approve-tool, --all…", verb)
	case f.allKinds && len(f.kinds) > 0:
		return usagef("--all-kinds and --kind: %s every kind, or the kinds named, not both", verb)
	case slices.Contains(f.kinds, grants.AllKindsWord):
		return agentledger.Invalid("--kind", "%q is not a kind to name: --all-kinds is every kind", grants.AllKindsWord)
	}
	if err := tenants.CheckName(tenant); err != nil {
		return invalidAs(err, "tenant name")
	}
	for _, h := range slices.Concat(f.hosts, f.secretHosts, f.approveHosts) {
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
	if _, err := a.knownTenant(ctx, db, tenant); err != nil {
		return err
	}
	store := grants.NewStore(db.Pool)
	hadAllKinds := false
	if _, err := store.Change(ctx, tenant, func(g *grants.Grant) error {
		if add {
			hadAllKinds = g.AllKinds && len(f.kinds) > 0
			f.addTo(g)
			return nil
		}
		return f.takeFrom(tenant, g)
	}); err != nil {
		// The grant's check names its config keys (max_tokens): here, the flag.
		var ie *agentledger.InvalidError
		if errors.As(err, &ie) && !strings.HasPrefix(ie.Field, "--") && strings.ContainsRune(ie.Field, '_') {
			return agentledger.Invalid("--"+strings.ReplaceAll(ie.Field, "_", "-"), "%s", ie.Problem)
		}
		return err
	}
	r, err := store.Record(ctx, tenant)
	if err != nil {
		return err
	}
	if add {
		if hadAllKinds {
			fmt.Fprintf(a.stderr, "agentctl: note: tenant %s had every kind; now only %s (a kind named replaces every kind: "+
				"agentctl tenant grant %s --all-kinds gives them back)\n", tenant, strings.Join(sortedUnique(f.kinds), ", "), tenant)
		}
		a.warnUnknownNames(ctx, db, f)
	} else {
		// A kind is the right to submit tasks of it: those queued already
		// run on unless cancelled.
		for _, k := range f.kinds {
			a.noteUnfinished(ctx, tenant, k, fmt.Sprintf("revoking kind %s refuses tenant %s's submissions and replays of it", k, tenant))
		}
	}
	return a.printGrant(tenant, r)
}

// warnUnknownNames says on stderr which kinds and tools the grant names
// that no live worker serves: a typo grants nothing the tenant can use
// (and --kind replaces every kind with it). A grant made before its
// daemons start is normal, hence a warning, and nothing is said without a
// live worker to ask, or when the look fails.
func (a *app) warnUnknownNames(ctx context.Context, db *database.DB, f *grantFlags) {
	live, err := registry.New(db.Pool).LiveWorkers(ctx)
	if err != nil || len(live) == 0 {
		return
	}
	var kinds, tools []string
	anyKind, anyTool := false, false // an older worker's: it announced none
	for _, w := range live {
		kinds = append(kinds, w.Kinds...)
		tools = append(tools, w.Tools...)
		anyKind = anyKind || len(w.Kinds) == 0
		anyTool = anyTool || len(w.Tools) == 0
	}
	for _, k := range f.kinds {
		if anyKind {
			break
		}
		if !slices.Contains(kinds, k) {
			fmt.Fprintf(a.stderr, "agentctl: warning: no live worker serves kind %s (they serve %s)\n", k, strings.Join(sortedUnique(kinds), ", "))
		}
	}
	for _, t := range slices.Concat(f.tools, f.approveTools) {
		if anyTool || strings.HasSuffix(t, "/*") || slices.Contains(tools, t) {
			continue
		}
		fmt.Fprintf(a.stderr, "agentctl: warning: no live worker has tool %s (they have %s)\n", t, strings.Join(sortedUnique(tools), ", "))
	}
}

func sortedUnique(names []string) []string {
	names = slices.Clone(names)
	slices.Sort(names)
	return slices.Compact(names)
}

// knownTenant refuses a tenant that is not agentledger.OperatorTenant, nor
// in the tenants table, nor has a grant stored (a config file's, for a
// tenant to come): a mistyped name in an emergency revoke would store a
// grant nobody has and leave the real tenant's in force. It returns the
// tenant's stored grant, nil when none.
func (a *app) knownTenant(ctx context.Context, db *database.DB, tenant string) (*grants.Record, error) {
	r, err := grants.NewStore(db.Pool).Record(ctx, tenant)
	if err != nil || r != nil {
		return r, err
	}
	ok, err := tenants.NewStore(db.Pool).Exists(ctx, tenant)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, tenantNotFound(tenant, agentledger.ErrNotFound)
	}
	return nil, nil
}

// tenantGrantReset hands tenant's stored grant to the config file, as it
// is: it stays in force until a daemon whose file grants the tenant starts.
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
	if _, err := a.knownTenant(ctx, db, tenant); err != nil {
		return err
	}
	r, err := grants.NewStore(db.Pool).HandToConfig(ctx, tenant)
	if err != nil {
		return err
	}
	if !a.wantJSON() {
		msg := "tenant %s has no grant stored: it has the default one\n"
		if r != nil {
			msg = "grant of tenant %s handed to the config file: it stays in force until a daemon whose config file grants the tenant starts\n"
		}
		if _, err := fmt.Fprintf(a.stdout, msg, tenant); err != nil {
			return err
		}
	}
	return a.printGrant(tenant, r)
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
	if f.decide {
		g.Decide = true
	}
	if len(f.approveTools)+len(f.approveHosts)+len(f.approveChannels) > 0 {
		if g.Approve == nil {
			g.Approve = &grants.Approve{}
		}
		g.Approve.Tools = union(g.Approve.Tools, f.approveTools)
		g.Approve.Hosts = union(g.Approve.Hosts, f.approveHosts)
		g.Approve.Channels = union(g.Approve.Channels, f.approveChannels)
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
	if g.All {
		// Everything stays reachable whatever is taken back by name: a
		// revoke that looked done would leave it so.
		return withHint(newError(fmt.Sprintf("tenant %s may reach everything (granted --all): nothing can be taken back by name", tenant), agentledger.ErrConflict),
			fmt.Sprintf("take everything back (agentctl tenant revoke %s --all), then grant what it keeps", tenant))
	}
	if absent := f.absentFrom(g); len(absent) > 0 {
		// A mistyped name in an emergency revoke must not look like
		// success while what was meant stays granted.
		return withHint(newError(fmt.Sprintf("tenant %s's grant has no %s to take back: nothing changed", tenant, strings.Join(absent, ", ")), agentledger.ErrNotFound),
			fmt.Sprintf("agentctl tenant show %s shows what it has", tenant))
	}
	g.Kinds = minus(g.Kinds, f.kinds)
	g.Tools = minus(g.Tools, f.tools)
	g.Channels = minus(g.Channels, f.channels)
	g.Models = minus(g.Models, f.models)
	if f.decide {
		g.Decide = false
	}
	if g.Approve != nil {
		g.Approve.Tools = minus(g.Approve.Tools, f.approveTools)
		g.Approve.Hosts = minus(g.Approve.Hosts, f.approveHosts)
		g.Approve.Channels = minus(g.Approve.Channels, f.approveChannels)
		if len(g.Approve.Tools)+len(g.Approve.Hosts)+len(g.Approve.Channels) == 0 {
			g.Approve = nil
		}
	}
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

// absentFrom names what the flags would take back that g does not hold,
// by flag: "--tool shop/refnd", "--decide".
func (f *grantFlags) absentFrom(g *grants.Grant) []string {
	var absent []string
	named := func(flag string, names, have []string) {
		for _, n := range names {
			if !slices.Contains(have, n) {
				absent = append(absent, flag+" "+n)
			}
		}
	}
	var approve grants.Approve
	if g.Approve != nil {
		approve = *g.Approve
	}
	if !f.allKinds {
		named("--kind", f.kinds, g.Kinds)
	}
	named("--tool", f.tools, g.Tools)
	named("--channel", f.channels, g.Channels)
	named("--model", f.models, g.Models)
	named("--approve-tool", f.approveTools, approve.Tools)
	named("--approve-channel", f.approveChannels, approve.Channels)
	hosts := func(flag string, names []string, have func(h grants.Host) bool) {
		for _, n := range names {
			if !slices.ContainsFunc(g.Hosts, func(h grants.Host) bool { return sameHost(h.URL, n) && have(h) }) {
				absent = append(absent, flag+" "+n)
			}
		}
	}
	hosts("--host", f.hosts, func(grants.Host) bool { return true })
	hosts("--host-with-secrets", f.secretHosts, func(h grants.Host) bool { return h.SecretHeaders })
	named("--approve-host", f.approveHosts, approve.Hosts) // taken back as written (minus)
	if f.decide && !g.Decide {
		absent = append(absent, "--decide")
	}
	return absent
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

// grantFields are a grant's parts, printed as they are: without Grant's
// JSON methods, which write the stored document.
type grantFields grants.Grant

// grantJSON is tenant show's --output json: the grant in force, and who set
// it when (null when none is stored: the default grant).
type grantJSON struct {
	Tenant string `json:"tenant"`
	grantFields
	SetBy     *string    `json:"set_by"` // operator, config or unknown
	UpdatedAt *time.Time `json:"updated_at"`
}

// printGrant prints tenant's stored grant r, or its default one when r is
// nil, and who set it.
func (a *app) printGrant(tenant string, r *grants.Record) error {
	g := grants.Default(tenant)
	if r != nil {
		g = r.Grant
	}
	if a.wantJSON() {
		out := grantJSON{Tenant: tenant, grantFields: grantFields(*g)}
		if out.Kinds == nil {
			out.Kinds = []string{}
		}
		if r != nil {
			setBy := cmp.Or(r.SetBy, "unknown")
			out.SetBy, out.UpdatedAt = &setBy, &r.UpdatedAt
		}
		return printJSON(a.stdout, out)
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
	if g.Decide {
		fmt.Fprintln(w, "  decides:  its tasks' approval requests, through the API")
	}
	if a := g.Approve; a != nil {
		var asks []string
		asks = append(asks, a.Tools...)
		asks = append(asks, a.Hosts...)
		for _, c := range a.Channels {
			asks = append(asks, "#"+c)
		}
		fmt.Fprintf(w, "  asks:     a person's approval before calls of %s\n", strings.Join(asks, ", "))
	}
	return nil
}

// setByText says who set a stored grant, when, and whether a daemon's
// config file may replace it.
func setByText(tenant string, r *grants.Record) string {
	switch r.SetBy {
	case grants.SetByOperator:
		return "an operator (agentctl) at " + stamp(r.UpdatedAt) + "; config files never replace it (tenant grant " + tenant + " --reset hands it to them)"
	case grants.SetByConfig:
		return "the config file ([grant." + tenant + "] of a daemon, or handed to it) at " + stamp(r.UpdatedAt) +
			"; the next start of a daemon whose file grants " + tenant + " replaces it"
	}
	return "unknown (stored before agentledger recorded who set grants) at " + stamp(r.UpdatedAt) +
		"; a config file that differs leaves it in force (tenant grant " + tenant + " --reset hands it to the file)"
}
