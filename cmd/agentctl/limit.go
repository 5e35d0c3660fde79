package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/flow"
	"github.com/agentledger/agentledger/registry"
)

// Defaults of a breaker's window and cool-down when only
// --breaker-failures is given.
const (
	defaultBreakerWindow   = time.Minute
	defaultBreakerCooldown = 30 * time.Second
)

func (a *app) limitCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "limit set|list|rm",
		Short: "Manage the fleet-wide limits: rates, concurrency caps, token budgets, breakers",
		Long: `A limit holds the calls every daemon makes to one target, together. It has
any of these parts, at least one:
  --rate N/s|N/min [--burst N]   at most N calls a second or a minute, after a
                                 burst of up to --burst calls at once
  --concurrency N                at most N calls in flight across the fleet
  --tokens N/min                 a model endpoint's tokens (prompt and
                                 completion) a minute or a second
  --breaker-failures N           a circuit breaker: N failed calls within
                                 --breaker-window open it for every daemon
                                 (see agentctl breaker --help)

A target is KIND:NAME:
  http:https://billing.internal:8080   an HTTP origin (scheme, host, port);
                                       also written https://billing.internal:8080,
                                       or http:billing.internal:8080 (https, as
                                       the allow-list reads a bare host)
  mcp:shop                             an MCP server
  model:api.openai.com                 a model endpoint's host
  slack-channel:C0123ABCD              a Slack channel, by its ID
  slack-workspace                      the Slack workspace
KIND:* (slack-channel:*) is the kind's default: every target of that kind
without a limit of its own gets it, each with its own budget, cap and
breaker.

A call over a limit waits: up to a second in its attempt, longer by handing
the task back to its queue until the call may pass, without using an
attempt. Daemons read the limits every few seconds. agentd's [[limit]]
tables are stored when it starts, replacing the limits a config file or
agentd set, never one set here: an operator's limit stands (the daemon
logs how its file differs). limit rm leaves the target without a limit
until a daemon whose file has one starts again and stores it.`,
		Args: cobra.NoArgs,
		RunE: a.action(func(context.Context, []string) error {
			return usagef("limit needs a subcommand: set, list or rm")
		}),
	}
	cmd.AddCommand(a.limitSetCmd(), a.limitListCmd(), a.limitRmCmd())
	return cmd
}

// limitFlags are limit set's flags.
type limitFlags struct {
	rate, tokens     string
	burst, conc      int
	failures         int
	window, cooldown time.Duration
}

func (a *app) limitSetCmd() *cobra.Command {
	var f limitFlags
	cmd := &cobra.Command{
		Use:   "set TARGET [--rate N/s|N/min [--burst N]] [--concurrency N] [--tokens N/min] [--breaker-failures N [--breaker-window D] [--breaker-cooldown D]]",
		Short: "Set a target's limit",
		Long: `Set TARGET's limit, replacing any: the parts given, at least one. A part
not given is not limited (setting a target again does not keep its old
parts).

A breaker needs --breaker-failures; its window is 60s and its cool-down 30s
unless --breaker-window and --breaker-cooldown say otherwise. Slack targets
take no breaker (the notification outbox retries with backoff); --tokens is
for model targets.

It warns, and stores the limit all the same, when no live worker makes the
calls it paces: an HTTP origin none of their HTTP tools may call (their
allow-lists), an MCP server none is configured with.

With --output json it prints the limit stored.`,
		Example: `  agentctl limit set slack-channel:* --rate 1/s
  agentctl limit set http:https://billing.internal:8080 --rate 600/min --burst 10
  agentctl limit set mcp:shop --concurrency 5 --breaker-failures 5 --breaker-window 60s --breaker-cooldown 30s
  agentctl limit set model:api.openai.com --rate 60/min --tokens 90000/min`,
		Args: oneTarget,
	}
	cmd.RunE = a.action(func(ctx context.Context, args []string) error {
		l, err := f.limit(cmd, args[0])
		if err != nil {
			return err
		}
		return a.limitSet(ctx, l)
	})
	fs := cmd.Flags()
	fs.StringVar(&f.rate, "rate", "", "calls allowed: N/s or N/min")
	fs.IntVar(&f.burst, "burst", 1, "calls allowed at once before the rate applies (with --rate)")
	fs.IntVar(&f.conc, "concurrency", 0, "calls in flight at once across the fleet")
	fs.StringVar(&f.tokens, "tokens", "", "tokens allowed (model targets): N/min or N/s")
	fs.IntVar(&f.failures, "breaker-failures", 0, "failed calls within the window that open the breaker")
	fs.DurationVar(&f.window, "breaker-window", defaultBreakerWindow, "how far back the breaker counts failures (with --breaker-failures)")
	fs.DurationVar(&f.cooldown, "breaker-cooldown", defaultBreakerCooldown, "how long an open breaker waits before one call probes (with --breaker-failures)")
	return cmd
}

// limit builds the limit the flags describe; errors name the flag.
func (f *limitFlags) limit(cmd *cobra.Command, target string) (flow.Limit, error) {
	set := cmd.Flags().Changed
	switch {
	case set("breaker-window") && !set("breaker-failures"):
		return flow.Limit{}, usagef("--breaker-window needs --breaker-failures: the failures within the window open the breaker")
	case set("breaker-cooldown") && !set("breaker-failures"):
		return flow.Limit{}, usagef("--breaker-cooldown needs --breaker-failures: the cool-down is of a breaker opened by failures")
	case !set("rate") && !set("concurrency") && !set("tokens") && !set("breaker-failures"):
		return flow.Limit{}, usagef("limit set needs at least one of --rate, --concurrency, --tokens, --breaker-failures")
	}
	l := flow.Limit{Target: target, Source: flow.SourceOperator}
	if set("rate") {
		r, err := flow.ParseRate(f.rate)
		if err != nil {
			return flow.Limit{}, flagError(err)
		}
		l.Rate, l.Burst = r, f.burst
		if f.burst < 1 {
			return flow.Limit{}, agentledger.Invalid("--burst", "%d must be at least 1", f.burst)
		}
	} else if set("burst") {
		return flow.Limit{}, usagef("--burst needs --rate: a burst is of calls at the rate")
	}
	if set("concurrency") {
		if f.conc < 1 || f.conc > flow.MaxConcurrency {
			return flow.Limit{}, agentledger.Invalid("--concurrency", "%d must be 1..%d calls in flight", f.conc, flow.MaxConcurrency)
		}
		l.Concurrency = f.conc
	}
	if set("tokens") {
		r, err := flow.ParseRate(f.tokens)
		if err != nil { // ParseRate names the field "rate"
			var ie *agentledger.InvalidError
			if errors.As(err, &ie) {
				return flow.Limit{}, agentledger.Invalid("--tokens", "%s", ie.Problem)
			}
			return flow.Limit{}, err
		}
		l.Tokens = r
	}
	if set("breaker-failures") {
		b, err := f.breaker()
		if err != nil {
			return flow.Limit{}, err
		}
		l.Breaker = b
	}
	if err := l.Check(); err != nil { // before connecting: bad input changes nothing
		return flow.Limit{}, flagError(err)
	}
	return l, nil
}

// breaker checks the breaker flags, naming the one at fault.
func (f *limitFlags) breaker() (*flow.Breaker, error) {
	switch {
	case f.failures < 1 || f.failures > flow.MaxN:
		return nil, agentledger.Invalid("--breaker-failures", "%d must be 1..%d failed calls", f.failures, flow.MaxN)
	case f.window < time.Millisecond || f.window > flow.MaxBreakerWindow:
		return nil, agentledger.Invalid("--breaker-window", "%s must be 1ms..%s", f.window, flow.Span(flow.MaxBreakerWindow))
	case f.cooldown < time.Millisecond || f.cooldown > flow.MaxBreakerWindow:
		return nil, agentledger.Invalid("--breaker-cooldown", "%s must be 1ms..%s", f.cooldown, flow.Span(flow.MaxBreakerWindow))
	}
	return &flow.Breaker{Failures: f.failures, Window: f.window, Cooldown: f.cooldown}, nil
}

func (a *app) limitListCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List the limits",
		Long: `List the limits by target: RATE and BURST, CONCURRENCY (calls in flight
across the fleet), TOKENS (a model endpoint's token rate) and BREAKER
("5 in 60s, cool-down 30s": 5 failed calls within 60s open it for 30s); "-"
where the limit has no such part. SOURCE is operator (agentctl limit set),
config (agentd's config file) or default (agentd's own). agentctl breaker
list shows the breakers' states.

With --output json it prints an array of limits.`,
		Args: cobra.NoArgs,
		RunE: a.action(func(ctx context.Context, _ []string) error { return a.limitList(ctx) }),
	}
}

func (a *app) limitRmCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "rm TARGET",
		Aliases: []string{"remove"},
		Short:   "Remove a target's limit",
		Long: `Remove TARGET's own limit: its calls follow its kind's default, if any,
or are not limited. A limit in agentd's config file comes back when a
daemon with that file starts again (removing an operator's limit hands the
target back to the config file).`,
		Args: oneTarget,
		RunE: a.action(func(ctx context.Context, args []string) error { return a.limitRemove(ctx, args[0]) }),
	}
}

// oneTarget accepts exactly one argument, a target.
func oneTarget(cmd *cobra.Command, args []string) error {
	if len(args) != 1 {
		return usagef("%s takes one target, got %d arguments", commandName(cmd), len(args))
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

// limitFlag is the flag of each field of a limit whose name differs.
var limitFlag = map[string]string{"breaker": "breaker-failures"}

// flagError names the flag of an invalid field: --rate, --burst.
func flagError(err error) error {
	var ie *agentledger.InvalidError
	if errors.As(err, &ie) && ie.Field != "target" {
		name := ie.Field
		if f, ok := limitFlag[name]; ok {
			name = f
		}
		return agentledger.Invalid("--"+name, "%s", ie.Problem)
	}
	return err
}

func (a *app) limitSet(ctx context.Context, l flow.Limit) error {
	limits, err := a.limits(ctx)
	if err != nil {
		return err
	}
	// What it replaces, said when it differs: a part not given again is
	// gone, which an operator adding one part would not expect.
	was, werr := limits.Get(ctx, l.Target)
	got, err := limits.Put(ctx, l)
	if err != nil {
		return flagError(err)
	}
	released, err := a.releaseLimited(ctx, got.Target)
	if err != nil {
		return err
	}
	a.warnUnreached(ctx, got.Target)
	if a.wantJSON() {
		return printJSON(a.stdout, got)
	}
	dropped := ""
	if werr == nil {
		if gone := droppedParts(was, got); gone != "" {
			dropped = "; no longer " + gone + " (a part not given again is not limited)"
		}
	}
	_, err = fmt.Fprintf(a.stdout, "limit %s set: %s%s%s\n", got.Target, describeLimit(got), dropped, released)
	return err
}

// warnUnreached says on stderr when no live worker makes the calls a
// limit on target paces: an HTTP origin none of their HTTP tools may call,
// an MCP server none is configured with. A mistyped host or port would
// otherwise be a limit that holds nothing, said nowhere. The limit stands
// (a daemon to come may call the target); nothing is said without a live
// worker to ask, when one did not announce what it can call (an older
// version), for a kind's default, or for models and Slack, which workers
// do not announce by target.
func (a *app) warnUnreached(ctx context.Context, target string) {
	kind, name, _ := strings.Cut(target, ":")
	if name == "*" || (kind != flow.KindHTTP && kind != flow.KindMCP) {
		return
	}
	live, err := registry.New(a.db.Pool).LiveWorkers(ctx)
	if err != nil || len(live) == 0 {
		return
	}
	var reached []string
	for _, w := range live {
		if kind == flow.KindMCP {
			for server := range w.MCPServers {
				reached = append(reached, server)
			}
			continue
		}
		if w.Caps == nil {
			return
		}
		for _, c := range w.Caps {
			if _, origin, ok := strings.Cut(c, "@"); ok {
				reached = append(reached, origin)
			}
		}
	}
	if slices.Contains(reached, name) {
		return
	}
	have := "none"
	if len(reached) > 0 {
		have = strings.Join(sortedUnique(reached), ", ")
	}
	if kind == flow.KindMCP {
		fmt.Fprintf(a.stderr, "agentctl: warning: no live worker is configured with MCP server %s (they have: %s): "+
			"the limit paces nothing until one is\n", name, have)
		return
	}
	fmt.Fprintf(a.stderr, "agentctl: warning: no live worker's HTTP tools may call %s (their allow-lists: %s): "+
		"the limit paces nothing until one may\n", name, have)
}

// releaseLimited makes due now the tasks target's rate or token budget
// deferred, so that they are judged by the limit as it now stands, not
// held to the slot the old one gave them; it says how many, or "".
func (a *app) releaseLimited(ctx context.Context, target string) (string, error) {
	s := claims.New(a.db.Pool)
	var n int64
	for _, prefix := range []string{flow.RateReason(target), flow.TokenReason(target)} {
		m, err := s.ReleaseDeferred(ctx, prefix)
		if err != nil {
			return "", fmt.Errorf("limit %s changed, but the tasks it held back wait for their deferral's time: %w", target, err)
		}
		n += m
	}
	if n == 0 {
		return "", nil
	}
	return fmt.Sprintf("; %s it held back due now", plural(n, "task")), nil
}

// droppedParts spells the parts of was that now lacks, each as
// describeLimit does, joined by "nor": "600/min, burst 10 nor breaker 5
// in 60s, cool-down 30s".
func droppedParts(was, now flow.Limit) string {
	var gone flow.Limit
	if now.Rate.IsZero() {
		gone.Rate, gone.Burst = was.Rate, was.Burst
	}
	if now.Concurrency == 0 {
		gone.Concurrency = was.Concurrency
	}
	if now.Tokens.IsZero() {
		gone.Tokens = was.Tokens
	}
	if now.Breaker == nil {
		gone.Breaker = was.Breaker
	}
	return strings.Join(limitParts(gone), " nor ")
}

// describeLimit spells a limit's parts: "600/min, burst 10; 5 in flight;
// breaker 5 in 60s, cool-down 30s".
func describeLimit(l flow.Limit) string { return strings.Join(limitParts(l), "; ") }

// limitParts spells each part of a limit.
func limitParts(l flow.Limit) []string {
	var parts []string
	if !l.Rate.IsZero() {
		parts = append(parts, fmt.Sprintf("%s, burst %d", l.Rate, l.Burst))
	}
	if l.Concurrency > 0 {
		parts = append(parts, fmt.Sprintf("%d in flight", l.Concurrency))
	}
	if !l.Tokens.IsZero() {
		parts = append(parts, l.Tokens.String()+" tokens")
	}
	if l.Breaker != nil {
		parts = append(parts, "breaker "+threshold(l.Breaker))
	}
	return parts
}

// threshold spells a breaker's configuration: "5 in 60s, cool-down 30s".
func threshold(b *flow.Breaker) string {
	if b == nil {
		return ""
	}
	return b.String()
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
	if done, err := listed(a, ls, "no limits"); done {
		return err
	}
	t := newTable(a.stdout, "TARGET", "RATE", "BURST", "CONCURRENCY", "TOKENS", "BREAKER", "SOURCE")
	for _, l := range ls {
		burst, conc := "", ""
		if !l.Rate.IsZero() {
			burst = fmt.Sprint(l.Burst)
		}
		if l.Concurrency > 0 {
			conc = fmt.Sprint(l.Concurrency)
		}
		t.row(l.Target, orDash(l.Rate.String()), orDash(burst), orDash(conc), orDash(l.Tokens.String()),
			orDash(threshold(l.Breaker)), l.Source)
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
	released, err := a.releaseLimited(ctx, target)
	if err != nil {
		return err
	}
	if a.wantJSON() {
		return printJSON(a.stdout, struct {
			Target  string `json:"target"`
			Removed bool   `json:"removed"`
		}{target, true})
	}
	_, err = fmt.Fprintf(a.stdout, "limit %s removed%s\n", target, released)
	if err != nil {
		return err
	}
	// Its breaker's state is the target's, not the limit's: one open
	// still holds the target's calls until it lets a probe through.
	if bs, now, err := limits.Breakers(ctx); err == nil {
		for _, b := range bs {
			// Open, and not yet letting a probe through (one due, or half
			// open, lets the next call probe the target).
			if b.Target == target && b.State == flow.Open && (b.OpenUntil == nil || b.OpenUntil.After(now)) {
				until := "until an operator closes it"
				if b.OpenUntil != nil {
					until = "until " + stamp(*b.OpenUntil) + " (" + relative(*b.OpenUntil, now) + ")"
				}
				fmt.Fprintf(a.stderr, "agentctl: warning: %s's breaker is %s and holds its calls %s: agentctl breaker close %s\n",
					target, b.State, until, target)
			}
		}
	}
	return nil
}
