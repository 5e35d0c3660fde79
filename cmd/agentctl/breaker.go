package main

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/flow"
)

func (a *app) breakerCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "breaker list|open|close",
		Short: "Show, open and close the fleet's circuit breakers",
		Long: `A circuit breaker stops the calls to a failing target for the whole fleet.
agentctl limit set TARGET --breaker-failures N [--breaker-window D]
[--breaker-cooldown D] gives TARGET one (KIND:* gives each target of the
kind its own): N failed calls (timeouts, refused connections, 5xx answers)
within the window open it for every daemon.

While a breaker is open, calls to its target wait: a task making one is
deferred, handed back to its queue without using an attempt, instead of
failing. After the cool-down one daemon's call probes the target: if it
succeeds the breaker closes for everyone, if it fails the breaker opens for
another cool-down.

An operator can open any target's breaker by hand, for a time or until
closed, and close one, forgetting its failures.`,
		Args: cobra.NoArgs,
		RunE: a.action(func(context.Context, []string) error {
			return usagef("breaker needs a subcommand: list, open or close")
		}),
	}
	cmd.AddCommand(a.breakerListCmd(), a.breakerOpenCmd(), a.breakerCloseCmd())
	return cmd
}

func (a *app) breakerListCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List the circuit breakers and their states",
		Long: `List every target with a breaker configured (its own limit's, or a kind's
default KIND:*) and every other breaker that counted a failure or is not
closed, by target (a closed one with no failures that nothing configures
— opened by hand and closed since, or its limit removed — is not listed).

STATE is closed, open or half_open (one call is probing the target).
FAILURES counts the failures within the window (closed) or those that
opened it. OPEN-UNTIL is when an open breaker lets a probe through, or
"until closed" when an operator opened it without --for. OPENS counts how
often it opened. THRESHOLD is the configuration in force ("5 in 60s,
cool-down 30s"), with the kind's default that gives it in parentheses; "-"
when none is (a breaker opened by hand). A kind's default has no state of
its own: each of its targets has one.

LAST-ERROR is the last failed call's error ("opened by an operator" for one
opened by hand). Once the breaker has closed, or the failure has left the
window, it is kept but labelled as past: "before it closed at 12:04:31 UTC:
503 Service Unavailable", "at 12:03:10 UTC, no longer counted: connection
refused".

With --output json it prints an array of breakers; last_error_past is true
when last_error is such a past one.`,
		Args: cobra.NoArgs,
		RunE: a.action(func(ctx context.Context, _ []string) error { return a.breakerList(ctx) }),
	}
}

func (a *app) breakerOpenCmd() *cobra.Command {
	var d time.Duration
	cmd := &cobra.Command{
		Use:   "open TARGET [--for D]",
		Short: "Open a target's breaker by hand, for every daemon",
		Long: `Open TARGET's breaker for every daemon: its calls wait (tasks are deferred
without using an attempt). With --for, after that time one call probes the
target, as after a cool-down; without it the breaker stays open until
agentctl breaker close. Any target may be opened, with a breaker configured
or not; a kind's default (KIND:*) and Slack targets may not.

With --output json it prints the breaker as it is now.`,
		Example: `  agentctl breaker open http:https://billing.internal:8080 --for 10m
  agentctl breaker open mcp:shop`,
		Args: oneTarget,
		RunE: a.action(func(ctx context.Context, args []string) error { return a.breakerOpen(ctx, args[0], d) }),
	}
	cmd.Flags().DurationVar(&d, "for", 0, "how long until one call probes the target (default: open until closed)")
	return cmd
}

func (a *app) breakerCloseCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "close TARGET",
		Short: "Close a target's breaker by hand, for every daemon",
		Long: `Close TARGET's breaker for every daemon and forget its failures: its calls
go through again at once, and the tasks it held back (deferred to when it
would have let them through) are due now. Finding them reads the task
table.

With --output json it prints the breaker as it was before, and how many
tasks it released ("released").`,
		Args: oneTarget,
		RunE: a.action(func(ctx context.Context, args []string) error { return a.breakerClose(ctx, args[0]) }),
	}
}

// breakerRow is one line of breaker list: a breaker's state, if it has
// one, with the configuration in force for its target.
type breakerRow struct {
	Target string `json:"target"`
	// State is empty for a kind's default: each of its targets has one.
	State      string     `json:"state,omitempty"`
	Failures   int        `json:"failures"`
	OpenUntil  *time.Time `json:"open_until,omitempty"`
	Manual     bool       `json:"manual"`
	ProbeUntil *time.Time `json:"probe_until,omitempty"`
	LastError  string     `json:"last_error,omitempty"`
	// LastErrorPast is set when LastError no longer describes the breaker:
	// it closed since (at ChangedAt), or the failure left the window. It
	// is kept to say what tripped the breaker, not as a current problem.
	LastErrorPast bool       `json:"last_error_past,omitempty"`
	Opens         int64      `json:"opens"`
	ChangedAt     *time.Time `json:"changed_at,omitempty"`
	// windowPassed is set when the failures counted left the window.
	windowPassed bool
	// Breaker is the configuration in force, from the limit named by
	// ConfiguredBy (the target's own or its kind's default).
	Breaker      *flow.Breaker `json:"breaker,omitempty"`
	ConfiguredBy string        `json:"configured_by,omitempty"`
}

// breakerRows merges the configured breakers and the stored ones; now is
// the database's clock.
func breakerRows(limits []flow.Limit, states []flow.BreakerState, now time.Time) []breakerRow {
	byTarget := make(map[string]flow.Limit, len(limits))
	rows := map[string]*breakerRow{}
	for _, l := range limits {
		byTarget[l.Target] = l
		if l.Breaker == nil {
			continue
		}
		r := &breakerRow{Target: l.Target, Breaker: l.Breaker, ConfiguredBy: l.Target}
		if !isKindDefault(l.Target) {
			r.State = flow.Closed
		}
		rows[l.Target] = r
	}
	for _, s := range states {
		r := rows[s.Target]
		if r == nil {
			r = &breakerRow{Target: s.Target}
			// A target's own limit is the one in force, breaker or not;
			// without one, its kind's default.
			if _, own := byTarget[s.Target]; !own {
				kd := flow.KindDefault(kindOf(s.Target))
				if l, ok := byTarget[kd]; ok && l.Breaker != nil {
					r.Breaker, r.ConfiguredBy = l.Breaker, kd
				}
			}
			rows[s.Target] = r
		}
		changed := s.ChangedAt
		r.State, r.Failures, r.OpenUntil, r.Manual = s.State, s.Failures, s.OpenUntil, s.Manual
		r.ProbeUntil, r.LastError, r.Opens, r.ChangedAt = s.ProbeUntil, s.LastError, s.Opens, &changed
		if s.State == flow.Closed && r.Breaker != nil && s.WindowStart != nil && now.Sub(*s.WindowStart) > r.Breaker.Window {
			r.Failures = 0 // the window passed: the next failure starts anew
			r.windowPassed = s.Failures > 0
		}
		// A closed breaker counting no failure keeps the error from before
		// it closed (a probe succeeded, or an operator closed it) or of a
		// failure the window let go: history, not a current problem.
		r.LastErrorPast = r.State == flow.Closed && r.Failures == 0 && r.LastError != ""
		if r.Breaker == nil && r.State == flow.Closed && r.Failures == 0 {
			// Closed, no failures, configured by no limit (opened by hand
			// and closed since, or its limit removed): only history.
			delete(rows, s.Target)
		}
	}
	out := make([]breakerRow, 0, len(rows))
	for _, r := range rows {
		out = append(out, *r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Target < out[j].Target })
	return out
}

func isKindDefault(target string) bool { return target == flow.KindDefault(kindOf(target)) }

// kindOf is the kind of a normalised target.
func kindOf(target string) string {
	_, kind, _ := flow.ParseTarget(target)
	return kind
}

// openUntil says until when an open breaker stops the calls.
func openUntil(state string, until *time.Time, now time.Time) string {
	switch {
	case state != flow.Open:
		return "-"
	case until == nil:
		return "until closed"
	}
	return utcClock(*until, now)
}

// utcClock is a time of day in UTC, as the daemons' wait reasons write it,
// with the date when it is not within the day after now.
func utcClock(t, now time.Time) string {
	if d := t.Sub(now); d < -time.Hour || d > 20*time.Hour {
		return t.UTC().Format("2006-01-02 15:04:05 UTC")
	}
	return t.UTC().Format("15:04:05 UTC")
}

func (a *app) breakerList(ctx context.Context) error {
	store, err := a.limits(ctx)
	if err != nil {
		return err
	}
	ls, err := store.List(ctx)
	if err != nil {
		return err
	}
	states, now, err := store.Breakers(ctx)
	if err != nil {
		return err
	}
	rows := breakerRows(ls, states, now)
	if done, err := listed(a, rows, "no breakers: none configured (agentctl limit set … --breaker-failures N), none open"); done {
		return err
	}
	t := newTable(a.stdout, "TARGET", "STATE", "FAILURES", "OPEN-UNTIL", "OPENS", "THRESHOLD", "LAST-ERROR")
	for _, r := range rows {
		conf := threshold(r.Breaker)
		if conf != "" && r.ConfiguredBy != r.Target {
			conf += " (" + r.ConfiguredBy + ")"
		}
		if r.State == "" {
			t.row(r.Target, "-", "-", "-", "-", conf, "-")
			continue
		}
		t.row(r.Target, r.State, fmt.Sprint(r.Failures), openUntil(r.State, r.OpenUntil, now), fmt.Sprint(r.Opens),
			orDash(conf), lastErrorCell(r, now))
	}
	return t.flush()
}

// maxErrorCell bounds the LAST-ERROR cell, its label included.
const maxErrorCell = 80

// lastErrorCell is the LAST-ERROR cell: the error as it is while it
// describes the breaker (open, half-open, or a failure counted within the
// window), else labelled with when it became history, so that a closed
// breaker's old error does not read as a current problem.
func lastErrorCell(r breakerRow, now time.Time) string {
	if r.LastError == "" {
		return "-"
	}
	if !r.LastErrorPast || r.ChangedAt == nil {
		return truncate(r.LastError, maxErrorCell)
	}
	// Closed since, ChangedAt is when it closed; with the window passed,
	// when the last failure was counted.
	label := "before it closed at " + utcClock(*r.ChangedAt, now) + ": "
	if r.windowPassed {
		label = "at " + utcClock(*r.ChangedAt, now) + ", no longer counted: "
	}
	return label + truncate(r.LastError, maxErrorCell-len(label))
}

func (a *app) breakerOpen(ctx context.Context, target string, d time.Duration) error {
	if _, _, err := flow.ParseTarget(target); err != nil {
		return err
	}
	store, err := a.limits(ctx)
	if err != nil {
		return err
	}
	b, err := store.OpenBreaker(ctx, target, d)
	if err != nil {
		return flagError(err)
	}
	if a.wantJSON() {
		return printJSON(a.stdout, b)
	}
	if b.OpenUntil == nil {
		_, err = fmt.Fprintf(a.stdout, "breaker %s opened for every daemon until closed: its calls wait (agentctl breaker close %s lets them through)\n",
			b.Target, b.Target)
		return err
	}
	_, err = fmt.Fprintf(a.stdout, "breaker %s opened for every daemon until %s: its calls wait, then one probes the target\n",
		b.Target, utcClock(*b.OpenUntil, time.Now()))
	return err
}

func (a *app) breakerClose(ctx context.Context, target string) error {
	t, _, err := flow.ParseTarget(target)
	if err != nil {
		return err
	}
	store, err := a.limits(ctx)
	if err != nil {
		return err
	}
	if kind, ok := strings.CutSuffix(t, ":*"); ok {
		// A kind's default configures one breaker per target: name them.
		var open []string
		if bs, _, err := store.Breakers(ctx); err == nil {
			for _, b := range bs {
				if strings.HasPrefix(b.Target, kind+":") && b.State != flow.Closed {
					open = append(open, b.Target+" ("+b.State+")")
				}
			}
		}
		hint := "none of its targets' breakers is open now"
		if len(open) > 0 {
			hint = "close one of its targets' breakers: " + strings.Join(open, ", ")
		}
		return withHint(usagef("%s is a kind's default: each of its targets has its own breaker", t), hint)
	}
	was, err := store.CloseBreaker(ctx, t)
	if errors.Is(err, agentledger.ErrNotFound) {
		return withHint(newError(fmt.Sprintf("no breaker of %s to close: it never counted a failure nor was opened", t), err),
			"agentctl breaker list shows the breakers")
	}
	if err != nil {
		return err
	}
	// The tasks it held back were deferred to when it would have let
	// them through: they go now.
	released, err := claims.New(a.db.Pool).ReleaseDeferred(ctx, flow.BreakerReason(was.Target))
	if err != nil {
		return fmt.Errorf("breaker %s closed, but the tasks it held back wait for their deferral's time: %w", was.Target, err)
	}
	if a.wantJSON() {
		return printJSON(a.stdout, struct {
			flow.BreakerState
			Released int64 `json:"released"`
		}{was, released})
	}
	_, err = fmt.Fprintf(a.stdout, "breaker %s closed for every daemon, its failures forgotten (it was %s); %s it held back due now\n",
		was.Target, wasState(was), plural(released, "task"))
	return err
}

// wasState says what a breaker was: "open until closed", "open until
// 12:00:00 UTC, 5 failures", "half_open", "closed, 2 failures".
func wasState(b flow.BreakerState) string {
	s := b.State
	switch {
	case b.State == flow.Open && b.OpenUntil == nil:
		s += " until closed"
	case b.State == flow.Open:
		s += " until " + utcClock(*b.OpenUntil, time.Now())
	}
	if b.Manual {
		s += ", opened by an operator"
	} else if b.Failures > 0 {
		s += fmt.Sprintf(", %d failures", b.Failures)
	}
	return s
}
