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
	"github.com/agentledger/agentledger/grants"
	"github.com/agentledger/agentledger/notify/outbox"
	"github.com/agentledger/agentledger/registry"
)

func (a *app) ruleCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "rule add|list|rm|enable|disable",
		Short: "Manage the notification rules",
		Long: `A notification rule posts a message about each task it matches (by tenant,
queue and kind; an empty one matches every one) to its channel when the task
reaches one of the rule's events, the task states:
` + strings.Join(outbox.Events, ", ") + `.

A rule posts one message per task and rule, at the first of its events the
task reaches, and updates that message in place as the task changes state,
so the channel shows where every task stands without a message per change.
A task re-run as a new intent gets a new message.

agentd delivers the messages: to Slack when it has a token, otherwise to its
console sink. Adding, disabling or removing a rule affects the state changes
from then on; messages already due are still delivered.`,
		Args: cobra.NoArgs,
		RunE: a.action(func(context.Context, []string) error {
			return usagef("rule needs a subcommand: add, list, rm, enable or disable")
		}),
	}
	cmd.AddCommand(a.ruleAddCmd(), a.ruleListCmd(), a.ruleRmCmd(),
		a.ruleEnableCmd("enable", true), a.ruleEnableCmd("disable", false))
	return cmd
}

// ruleFlags are the options of agentctl rule add as given.
type ruleFlags struct {
	tenant, queue, kind, channel string
	events                       []string
	disabled, replace            bool
}

func (a *app) ruleAddCmd() *cobra.Command {
	var f ruleFlags
	cmd := &cobra.Command{
		Use:   "add NAME --channel CHANNEL [flags]",
		Short: "Add a notification rule",
		Long: `Add a notification rule: tasks of --tenant, --queue and --kind (each
default every one) that reach one of --events notify --channel.

The rule posts one message per task and rule, at the first of these events,
and updates it in place at the next ones, so the message always shows the
task's latest state.

A --queue no live daemon works, or a --kind none serves, is warned of on
stderr (a misspelt name makes a rule that never hears of a task); the rule
is added all the same, since its daemons may not be up yet.

NAME is 1-63 characters of a-z, 0-9, '_', '.' and '-', starting with a letter
or digit. A name already taken is refused (exit 1) unless --replace is given,
which replaces that rule's settings.

With --output json it prints {"rule": {...}, "replaced": true|false}.`,
		Example: `  agentctl rule add ops-failures --channel C0123ABCD --events dead,needs_attention
  agentctl rule add emails --channel emails-log --queue emails --events succeeded,dead
  agentctl rule add emails --channel C0123ABCD --queue emails --replace`,
		Args: oneName,
		RunE: a.action(func(ctx context.Context, args []string) error { return a.ruleAdd(ctx, args[0], &f) }),
	}
	fl := cmd.Flags()
	fl.StringVar(&f.channel, "channel", "", "channel to post to: a Slack channel ID (C0123ABCD) or name (required)")
	tenantFlag(cmd, &f.tenant, "only tasks of this tenant (default every tenant)")
	fl.StringVar(&f.queue, "queue", "", "only tasks of this queue (default every queue)")
	fl.StringVar(&f.kind, "kind", "", "only tasks of this kind (default every kind)")
	fl.StringSliceVar(&f.events, "events", slices.Clone(outbox.DefaultEvents),
		"task states that notify (repeat or comma-separate): "+strings.Join(outbox.Events, ", "))
	fl.BoolVar(&f.disabled, "disabled", false, "add the rule disabled: it notifies nothing until enabled")
	fl.BoolVar(&f.replace, "replace", false, "replace the rule of this name if there is one")
	_ = cmd.MarkFlagRequired("channel")
	_ = cmd.RegisterFlagCompletionFunc("events", cobra.FixedCompletions(outbox.Events, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

func (a *app) ruleListCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List the notification rules",
		Long: `List the notification rules by name. A "*" in TENANT, QUEUE or KIND
matches every one.

With --output json it prints an array of rules; an empty tenant, queue or
kind matches every one.`,
		Args: cobra.NoArgs,
		RunE: a.action(func(ctx context.Context, _ []string) error { return a.ruleList(ctx) }),
	}
}

func (a *app) ruleRmCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "rm NAME",
		Aliases: []string{"remove"},
		Short:   "Remove a notification rule",
		Long: `Remove a notification rule: it notifies no further state changes. Messages
it already made due are still delivered.`,
		Args: oneName,
		RunE: a.action(func(ctx context.Context, args []string) error { return a.ruleRemove(ctx, args[0]) }),
	}
}

func (a *app) ruleEnableCmd(verb string, enabled bool) *cobra.Command {
	short, long := "Resume a disabled notification rule",
		`Resume a notification rule: the state changes from now on notify again.`
	if !enabled {
		short, long = "Pause a notification rule",
			`Pause a notification rule: it notifies no further state changes until it is
enabled again. Messages it already made due are still delivered.`
	}
	return &cobra.Command{
		Use:   verb + " NAME",
		Short: short,
		Long:  long,
		Args:  oneName,
		RunE: a.action(func(ctx context.Context, args []string) error {
			return a.ruleSetEnabled(ctx, args[0], enabled)
		}),
	}
}

// oneName accepts exactly one argument, a rule name.
func oneName(cmd *cobra.Command, args []string) error {
	if len(args) != 1 {
		return usagef("%s takes one rule name, got %d arguments", commandName(cmd), len(args))
	}
	return nil
}

// rules opens the database, checks that its schema is migrated and returns
// the notification rules in it.
func (a *app) rules(ctx context.Context) (*outbox.Rules, error) {
	db, err := a.open(ctx)
	if err != nil {
		return nil, err
	}
	if err := a.checkSchema(ctx, db); err != nil {
		return nil, err
	}
	return outbox.NewRules(db.Pool), nil
}

// ruleView is a rule as agentctl prints it in JSON.
type ruleView struct {
	Name      string    `json:"name"`
	Tenant    string    `json:"tenant"`
	Queue     string    `json:"queue"`
	Kind      string    `json:"kind"`
	Events    []string  `json:"events"`
	Channel   string    `json:"channel"`
	Enabled   bool      `json:"enabled"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

func viewRule(r outbox.Rule) ruleView {
	evs := r.Events
	if evs == nil {
		evs = []string{}
	}
	return ruleView{Name: r.Name, Tenant: r.Tenant, Queue: r.Queue, Kind: r.Kind, Events: evs, Channel: r.Channel,
		Enabled: !r.Disabled, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}
}

// ruleAddResult is rule add's JSON output.
type ruleAddResult struct {
	Rule     ruleView `json:"rule"`
	Replaced bool     `json:"replaced"`
}

// rule checks the flags and turns them into a rule. Every error matches
// agentledger.ErrInvalid and names the flag (or the argument) at fault.
func (f *ruleFlags) rule(name string) (outbox.Rule, error) {
	r := outbox.Rule{Name: name, Tenant: f.tenant, Queue: f.queue, Kind: f.kind, Channel: f.channel, Disabled: f.disabled}
	for _, e := range f.events {
		r.Events = append(r.Events, strings.TrimSpace(e))
	}
	if err := r.Validate(); err != nil {
		var ie *agentledger.InvalidError
		if errors.As(err, &ie) {
			field := "--" + ie.Field
			if ie.Field == "name" {
				field = "rule name"
			}
			return r, agentledger.Invalid(field, "%s", ie.Problem)
		}
		return r, err
	}
	return r, nil
}

func (a *app) ruleAdd(ctx context.Context, name string, f *ruleFlags) error {
	r, err := f.rule(name)
	if err != nil {
		return err
	}
	rules, err := a.rules(ctx)
	if err != nil {
		return err
	}
	got, err := rules.Put(ctx, r, f.replace)
	if errors.Is(err, agentledger.ErrConflict) {
		return withHint(newError(fmt.Sprintf("rule %q already exists", name), err),
			"add --replace to replace it, or choose another name (agentctl rule list shows the rules)")
	}
	if err != nil {
		return err
	}
	// Known as tenant grant knows a tenant: by its row, or by a grant of its own.
	if got.Tenant != "" {
		if _, err := a.knownTenant(ctx, a.db, got.Tenant); errors.Is(err, agentledger.ErrNotFound) {
			fmt.Fprintf(a.stderr, "agentctl: warning: rule %s: tenant %s is not known: the rule notifies nothing until that tenant has tasks "+
				"(agentctl tenant add %s first, or mind the name)\n", got.Name, grants.ShellQuote(got.Tenant), grants.ShellQuote(got.Tenant))
		}
	}
	// A queue no live daemon works, or a kind none serves, as submit
	// warns of them: a misspelt queue or kind makes a rule that never
	// hears of a task. A daemon that announced none (an older version)
	// may work any.
	if got.Queue != "" || got.Kind != "" {
		if live, err := registry.New(a.db.Pool).LiveWorkers(ctx); err == nil && len(live) > 0 {
			for _, n := range []struct {
				does, name string
				of         func(registry.Worker) []string
			}{
				{"works queue", got.Queue, func(w registry.Worker) []string { return w.Queues }},
				{"serves kind", got.Kind, func(w registry.Worker) []string { return w.Kinds }},
			} {
				if n.name != "" && !slices.ContainsFunc(live, func(w registry.Worker) bool {
					return len(n.of(w)) == 0 || slices.Contains(n.of(w), n.name)
				}) {
					fmt.Fprintf(a.stderr, "agentctl: warning: rule %s: no live daemon %s %s: the rule hears of its tasks once one does (mind the name)\n",
						got.Name, n.does, grants.ShellQuote(n.name))
				}
			}
		}
	}
	// An upsert that replaced a rule keeps its creation time.
	replaced := !got.CreatedAt.Equal(got.UpdatedAt)
	if a.wantJSON() {
		return printJSON(a.stdout, ruleAddResult{Rule: viewRule(got), Replaced: replaced})
	}
	verb := "added"
	if replaced {
		verb = "replaced"
	}
	state := ""
	if got.Disabled {
		state = " (disabled)"
	}
	_, err = fmt.Fprintf(a.stdout, "rule %s %s%s: tasks of %s on %s post to %s\n",
		got.Name, verb, state, scope(got), strings.Join(got.Events, ", "), got.Channel)
	return err
}

// scope says which tasks a rule matches.
func scope(r outbox.Rule) string {
	var parts []string
	for _, f := range []struct{ name, v string }{{"tenant", r.Tenant}, {"queue", r.Queue}, {"kind", r.Kind}} {
		if f.v != "" {
			parts = append(parts, f.name+" "+f.v)
		}
	}
	if len(parts) == 0 {
		return "every tenant, queue and kind"
	}
	return strings.Join(parts, ", ")
}

// anyIfEmpty returns s, or "*" (every one) when it is empty.
func anyIfEmpty(s string) string {
	if s == "" {
		return "*"
	}
	return s
}

func (a *app) ruleList(ctx context.Context) error {
	rules, err := a.rules(ctx)
	if err != nil {
		return err
	}
	rs, err := rules.List(ctx)
	if err != nil {
		return err
	}
	if a.wantJSON() {
		out := make([]ruleView, len(rs))
		for i, r := range rs {
			out[i] = viewRule(r)
		}
		return printJSON(a.stdout, out)
	}
	if len(rs) == 0 {
		_, err := fmt.Fprintln(a.stderr, "no notification rules")
		return err
	}
	t := newTable(a.stdout, "NAME", "TENANT", "QUEUE", "KIND", "EVENTS", "CHANNEL", "ENABLED")
	for _, r := range rs {
		enabled := "yes"
		if r.Disabled {
			enabled = "no"
		}
		t.row(r.Name, anyIfEmpty(r.Tenant), anyIfEmpty(r.Queue), anyIfEmpty(r.Kind), strings.Join(r.Events, ","),
			r.Channel, enabled)
	}
	return t.flush()
}

// ruleNotFound is the error for an unknown rule name.
func ruleNotFound(name string, err error) error {
	return withHint(newError(fmt.Sprintf("rule %q not found", name), err), "agentctl rule list shows the rules")
}

// ruleChange is the JSON output of rule rm, enable and disable.
type ruleChange struct {
	Name    string `json:"name"`
	Removed bool   `json:"removed,omitempty"`
	Enabled *bool  `json:"enabled,omitempty"`
}

func (a *app) ruleRemove(ctx context.Context, name string) error {
	rules, err := a.rules(ctx)
	if err != nil {
		return err
	}
	err = rules.Remove(ctx, name)
	if errors.Is(err, agentledger.ErrNotFound) {
		return ruleNotFound(name, err)
	}
	if err != nil {
		return err
	}
	if a.wantJSON() {
		return printJSON(a.stdout, ruleChange{Name: name, Removed: true})
	}
	_, err = fmt.Fprintf(a.stdout, "rule %s removed\n", name)
	return err
}

func (a *app) ruleSetEnabled(ctx context.Context, name string, enabled bool) error {
	rules, err := a.rules(ctx)
	if err != nil {
		return err
	}
	was, err := rules.SetEnabled(ctx, name, enabled)
	if errors.Is(err, agentledger.ErrNotFound) {
		return ruleNotFound(name, err)
	}
	if err != nil {
		return err
	}
	if a.wantJSON() {
		return printJSON(a.stdout, ruleChange{Name: name, Enabled: &enabled})
	}
	var msg string
	switch {
	case enabled && was:
		msg = "rule %s was enabled already\n"
	case enabled:
		msg = "rule %s enabled\n"
	case was:
		msg = "rule %s disabled: it notifies no further state changes\n"
	default:
		msg = "rule %s was disabled already: it notifies no state changes until enabled\n"
	}
	_, err = fmt.Fprintf(a.stdout, msg, name)
	return err
}
