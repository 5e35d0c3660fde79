package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/admit"
	"github.com/agentledger/agentledger/grants"
	"github.com/agentledger/agentledger/operator"
	"github.com/agentledger/agentledger/waits"
)

// signalFlags are the options of agentctl signal as given.
type signalFlags struct {
	tenant, key, as string
	payload         payloadSpec
	retention       time.Duration
}

func (a *app) signalCmd() *cobra.Command {
	var f signalFlags
	cmd := &cobra.Command{
		Use:   "signal NAME KEY [--payload JSON|@file|-] [--idempotency-key K]",
		Short: "Send a signal: wake the task waiting for NAME and correlation KEY",
		Long: `Send the signal NAME with the correlation key KEY: the oldest task of the
tenant waiting for it (a wait_for_signal step or tool call) wakes, and the
payload (JSON, default {}) is its step's result. When no task waits for it
yet the signal is kept, for the first wait to come, until its retention
ends (--retention, default 7 days); agentctl signals lists those.

The same signal sent again is a duplicate and changes nothing: under the
same --idempotency-key, or without one when the name, key and payload are
the same. The key with another signal fails (exit 1) and stores nothing.

It prints whether the signal woke a task, and which, or until when it is
kept. With --output json it prints {"signal": {...}, "duplicate": bool};
with --output id the signal's id.`,
		Example: `  agentctl signal payment.settled order-7 --payload '{"amount":1500}'
  agentctl signal approval.reply ticket-91 --payload @reply.json --tenant acme
  agentctl signal inventory.restocked sku-4 --idempotency-key restock-2026-12-05 -o id`,
		Args:              signalArgs,
		ValidArgsFunction: cobra.NoFileCompletions,
	}
	cmd.RunE = a.action(func(ctx context.Context, args []string) error {
		if f.retention < 0 || (f.retention == 0 && cmd.Flags().Changed("retention")) {
			return usagef("--retention must be from 1s to %s, not %s", agentledger.DurationText(waits.MaxRetention), agentledger.DurationText(f.retention))
		}
		return a.signal(ctx, args[0], args[1], &f)
	})
	fl := cmd.Flags()
	fl.Var(&f.payload, "payload", "JSON payload, @file to read it from a file, or - for standard input (default {})")
	fl.StringVar(&f.key, "idempotency-key", "", "sending again under this key is the same signal (default: the name, key and payload)")
	tenantFlag(cmd, &f.tenant, `tenant whose tasks wait (default "`+agentledger.OperatorTenant+`")`)
	fl.DurationVar(&f.retention, "retention", 0, "how long it is kept when no task waits for it yet, 1s to 2160h (default 168h)")
	fl.StringVar(&f.as, "as", "", "who sends it, as recorded (default the OS user)")
	return cmd
}

// signalArgs accepts NAME and KEY.
func signalArgs(cmd *cobra.Command, args []string) error {
	if len(args) != 2 {
		return usagef("%s takes a signal NAME and a correlation KEY, got %d arguments", commandName(cmd), len(args))
	}
	return nil
}

// signalResult is signal's JSON output.
type signalResult struct {
	Signal    waits.Signal `json:"signal"`
	Duplicate bool         `json:"duplicate"`
	Woke      *waits.Wait  `json:"woke"`
}

func (a *app) signal(ctx context.Context, name, key string, f *signalFlags) error {
	if f.as != "" && strings.TrimSpace(f.as) == "" {
		return usagef("--as names who sends the signal, not blanks")
	}
	payload, err := readPayload(string(f.payload), a.stdin)
	if err != nil {
		return signalError(err)
	}
	if _, err := a.store(ctx); err != nil { // opens and checks the schema
		return err
	}
	door := &admit.Door{}
	sent, err := door.Signal(ctx, a.db.Pool, admit.SignalSubmission{Caller: admit.Operator,
		By:     cmp.Or(strings.TrimSpace(f.as), operator.Decider()),
		Params: waits.SignalParams{Tenant: f.tenant, Name: name, Key: key, Payload: payload, DedupeKey: f.key, Retention: f.retention}})
	if errors.Is(err, agentledger.ErrKeyReuse) {
		return withHint(err, "an idempotency key names one signal: send a different signal under a new --idempotency-key")
	}
	if err != nil {
		return signalError(err)
	}
	// Kept for a tenant nobody knows (a typo?): it would wait its whole
	// retention for a task that never comes. Known as tenant grant knows a
	// tenant: by its row, or by a grant of its own.
	if sent.Woke == nil && !sent.Duplicate {
		if _, err := a.knownTenant(ctx, a.db, sent.Signal.Tenant); errors.Is(err, agentledger.ErrNotFound) {
			fmt.Fprintf(a.stderr, "agentctl: warning: tenant %s is not known (no tenant row, no grant): the signal is kept for its tasks all the same; mind the name\n",
				grants.ShellQuote(sent.Signal.Tenant))
		}
	}
	if sent.Woke == nil {
		a.warnMissedWaits(ctx, sent)
		a.warnSentAgain(ctx, sent)
	}
	switch {
	case a.wantJSON():
		return printJSON(a.stdout, signalResult{Signal: sent.Signal, Duplicate: sent.Duplicate, Woke: sent.Woke})
	case a.output == "id":
		_, err := fmt.Fprintln(a.stdout, sent.Signal.ID)
		return err
	}
	_, err = fmt.Fprintln(a.stdout, sentText(sent, time.Now()))
	return err
}

// sentText says what became of a signal sent, for people.
func sentText(sent waits.Sent, now time.Time) string {
	s := sent.Signal
	what := fmt.Sprintf("%s key %s", s.Name, s.Key)
	switch {
	case sent.Duplicate:
		return fmt.Sprintf("duplicate: signal %d (%s) was sent before; %s", s.ID, what, signalFate(s, now))
	case sent.Woke != nil:
		return fmt.Sprintf("signal %d woke task %d (wait %d at step %s for %s)", s.ID, sent.Woke.TaskID, sent.Woke.ID, sent.Woke.Step, what)
	}
	return fmt.Sprintf("signal %d kept until %s (%s): no task waits for %s yet", s.ID, stamp(s.ExpiresAt), relative(s.ExpiresAt, now), what)
}

// signalFate says what became of a signal: who consumed it, until when it
// is kept, or that it expired.
func signalFate(s waits.Signal, now time.Time) string {
	switch {
	case s.State == "consumed" && s.TaskID != nil:
		return fmt.Sprintf("it woke task %d", *s.TaskID)
	case s.State == "pending" && s.ExpiresAt.After(now):
		return fmt.Sprintf("kept until %s (%s)", stamp(s.ExpiresAt), relative(s.ExpiresAt, now))
	}
	return "it expired at " + stamp(s.ExpiresAt) + " with no task waiting for it"
}

// signalError relabels a refusal of the door with the argument or flag at
// fault.
func signalError(err error) error {
	var ie *agentledger.InvalidError
	if !errors.As(err, &ie) {
		return err
	}
	field := ie.Field
	switch {
	case field == "name":
		field = "NAME"
	case field == "key":
		field = "KEY"
	case field == "idempotency_key":
		field = "--idempotency-key"
	case field == "tenant", field == "retention", strings.HasPrefix(field, "payload"):
		field = "--" + field
	}
	return agentledger.Invalid(field, "%s", ie.Problem)
}

func (a *app) signalsCmd() *cobra.Command {
	var (
		tenant, name string
		states       []string
		limit        int
	)
	cmd := &cobra.Command{
		Use:   "signals [--state pending|consumed|expired] [--name N]",
		Short: "List the signals sent: those no task has taken yet by default",
		Long: `List signals, newest first: by default the pending ones, which no task
waited for when they came and are kept for a wait to come until they
expire; --state consumed lists those a task took (and which), expired those
nobody took in time.

With --output json it prints the signals as an array; with --output id their
ids, one a line.`,
		Example: `  agentctl signals
  agentctl signals --state consumed,expired --name payment.settled -o json`,
		Args:              cobra.NoArgs,
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE: a.action(func(ctx context.Context, _ []string) error {
			for _, st := range states {
				if !slices.Contains(signalStates, st) {
					return usagef("--state must be %s, not %q", strings.Join(signalStates, ", "), st)
				}
			}
			if limit < 1 {
				return usagef("--limit must be at least 1, not %d", limit)
			}
			return a.signals(ctx, waits.ListSignalsParams{Tenant: tenant, Name: name, States: states, Limit: limit})
		}),
	}
	cmd.Flags().StringSliceVar(&states, "state", nil, "only signals in these states (repeat or comma-separate): "+strings.Join(signalStates, ", ")+" (default pending)")
	cmd.Flags().StringVar(&name, "name", "", "only signals of this name")
	tenantFlag(cmd, &tenant, "only this tenant's signals (default all)")
	cmd.Flags().IntVar(&limit, "limit", 100, "at most this many signals")
	_ = cmd.RegisterFlagCompletionFunc("state", cobra.FixedCompletions(signalStates, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

var signalStates = []string{"pending", "consumed", "expired"}

func (a *app) signals(ctx context.Context, p waits.ListSignalsParams) error {
	if _, err := a.store(ctx); err != nil {
		return err
	}
	ss, err := waits.NewStore(a.db.Pool).ListSignals(ctx, p)
	if err != nil {
		return err
	}
	if a.output == "id" {
		for _, s := range ss {
			fmt.Fprintln(a.stdout, s.ID)
		}
		return nil
	}
	if done, err := listed(a, ss, "no signals"); done {
		return err
	}
	now := time.Now()
	tab := newTable(a.stdout, "ID", "TENANT", "NAME", "KEY", "STATE", "SENT BY", "AGE", "FATE")
	for _, s := range ss {
		tab.row(strconv.FormatInt(s.ID, 10), s.Tenant, s.Name, truncate(s.Key, 40), s.State, truncate(s.SentBy, 30),
			age(now.Sub(s.SentAt)), signalFate(s, now))
	}
	if err := tab.flush(); err != nil {
		return err
	}
	if len(ss) == p.Limit {
		fmt.Fprintf(a.stderr, "more signals may follow: narrow with --name or raise --limit\n")
	}
	return nil
}

// warnMissedWaits says which tasks wait for the signal just sent that it
// did not reach: another tenant's (a signal reaches its own tenant's
// waits only), or, for a duplicate, its own tenant's that came after the
// first send was consumed or expired (a re-run waiting again): the same
// signal is sent once; a new one needs its own --idempotency-key.
// warnSentAgain warns when a signal kept for a wait to come has a twin —
// its tenant, name and key — that already woke a task: the same news sent
// twice (from the console, then here), which a task that waits for it
// again would take as new. An idempotency key makes a repeat a duplicate.
func (a *app) warnSentAgain(ctx context.Context, sent waits.Sent) {
	if sent.Duplicate {
		return
	}
	s := sent.Signal
	consumed, err := waits.NewStore(a.db.Pool).ListSignals(ctx, waits.ListSignalsParams{Tenant: s.Tenant, Name: s.Name,
		States: []string{"consumed"}, Limit: 50})
	if err != nil {
		return // a warning, not worth failing a sent signal for
	}
	for _, c := range consumed {
		if c.Key != s.Key || c.TaskID == nil || c.ConsumedAt == nil {
			continue
		}
		fmt.Fprintf(a.stderr, "agentctl: warning: signal %d (%s key %s) woke task %d %s; this one is kept for the next wait for it, "+
			"which takes it as news: to send the same news more than once, give every sending the same --idempotency-key\n",
			c.ID, s.Name, s.Key, *c.TaskID, relative(*c.ConsumedAt, time.Now()))
		return
	}
}

func (a *app) warnMissedWaits(ctx context.Context, sent waits.Sent) {
	ws, err := waits.NewStore(a.db.Pool).WaitingFor(ctx, sent.Signal.Name, sent.Signal.Key)
	if err != nil {
		return // a warning, not worth failing a sent signal for
	}
	for _, w := range ws {
		switch {
		case w.Tenant != sent.Signal.Tenant:
			fmt.Fprintf(a.stderr, "agentctl: warning: task %d of tenant %s waits for %s key %s, which this signal (tenant %s's) does not reach: send it with --tenant %s\n",
				w.TaskID, grants.ShellQuote(w.Tenant), w.Signal, w.Key, grants.ShellQuote(sent.Signal.Tenant), grants.ShellQuote(w.Tenant))
		case sent.Duplicate:
			fmt.Fprintf(a.stderr, "agentctl: warning: task %d waits for %s key %s now (generation %d), and this signal was sent before: "+
				"send it anew with --idempotency-key and a key of its own\n", w.TaskID, w.Signal, w.Key, w.Generation)
		}
	}
}
