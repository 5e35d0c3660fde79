package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/operator"
	"github.com/agentledger/agentledger/render"
	"github.com/agentledger/agentledger/waits"
)

var (
	waitKinds  = []string{waits.KindSignal, waits.KindTimer, waits.KindChildren}
	waitStates = []string{waits.Waiting, waits.Done, waits.TimedOut, waits.Ended, waits.Cancelled}
)

func (a *app) waitsCmd() *cobra.Command {
	var (
		tenant, kind string
		task         int64
		states       []string
		limit        int
		wait         time.Duration
	)
	cmd := &cobra.Command{
		Use:   "waits [--task ID] [--kind signal|timer|children] [--state …]",
		Short: "List what the waiting tasks wait for: a signal and its key, a timer, their children",
		Long: `List the durable waits of tasks (wait_for_signal, wait_timer,
wait_for_children): by default the ones still waiting, the soonest deadline
first. Each row says what its task waits for — the signal and its
correlation key, a timer, its children — its deadline (when a timer fires,
when a wait times out) and how long it has waited. --state lists other
states too (done, timed_out, ended, cancelled): the waiting ones first,
the soonest deadline first, then the others newest first.

--wait D waits up to D for a wait to list, for a script that has just
submitted a task that waits (exit 1 if none came).

Send the signal a task waits for with agentctl signal NAME KEY; end a wait
with agentctl end-wait ID --reason TEXT.

With --output json it prints the waits as an array; with --output id their
ids, one a line.`,
		Example: `  agentctl waits
  agentctl waits --kind signal -o json
  agentctl waits --task 42 --wait 1m -o id
  agentctl waits --task 42 --state waiting,done,timed_out,ended,cancelled`,
		Args:              cobra.NoArgs,
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE: a.action(func(ctx context.Context, _ []string) error {
			switch {
			case task < 0:
				return usagef("--task must be a positive task id, not %d", task)
			case kind != "" && !slices.Contains(waitKinds, kind):
				return usagef("--kind must be %s, not %q", strings.Join(waitKinds, ", "), kind)
			case limit < 1:
				return usagef("--limit must be at least 1, not %d", limit)
			case wait < 0:
				return usagef("--wait must be 0 (do not wait) or positive, not %s", wait)
			}
			for _, st := range states {
				if !slices.Contains(waitStates, st) {
					return usagef("--state must be %s, not %q", strings.Join(waitStates, ", "), st)
				}
			}
			return a.waits(ctx, waits.ListParams{Tenant: tenant, TaskID: task, Kind: kind, States: states, Limit: limit}, wait)
		}),
	}
	fl := cmd.Flags()
	fl.Int64Var(&task, "task", 0, "only this task's waits")
	fl.StringVar(&kind, "kind", "", "only waits of this kind: "+strings.Join(waitKinds, ", "))
	fl.StringSliceVar(&states, "state", nil, "only waits in these states (repeat or comma-separate): "+strings.Join(waitStates, ", ")+" (default waiting)")
	tenantFlag(cmd, &tenant, "only the waits of this tenant's tasks")
	fl.IntVar(&limit, "limit", 100, "at most this many waits")
	fl.DurationVar(&wait, "wait", 0, "wait up to this long for a wait to list (a task about to reach its wait); exit 1 if none came")
	_ = cmd.RegisterFlagCompletionFunc("kind", cobra.FixedCompletions(waitKinds, cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.RegisterFlagCompletionFunc("state", cobra.FixedCompletions(waitStates, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

func (a *app) waits(ctx context.Context, p waits.ListParams, wait time.Duration) error {
	if _, err := a.store(ctx); err != nil {
		return err
	}
	// --wait polls as agentctl wait does: a wait is one row written by
	// another process's worker.
	store := waits.NewStore(a.db.Pool)
	deadline := time.Now().Add(wait)
	ws, err := store.List(ctx, p)
	for err == nil && len(ws) == 0 && wait > 0 {
		if !time.Now().Before(deadline) {
			return newError(fmt.Sprintf("no wait came within %s", wait), agentledger.ErrConflict)
		}
		// A task that finished will wait for nothing more: said now, not
		// after the whole --wait.
		if p.TaskID != 0 {
			var state agentledger.TaskState
			if err := a.db.Pool.QueryRow(ctx, `/* agentctl.waits_task */ SELECT state FROM tasks WHERE id = $1`, p.TaskID).Scan(&state); err == nil && state.Finished() {
				return newError(fmt.Sprintf("task %d ended %s: no wait of it will come", p.TaskID, state), agentledger.ErrConflict)
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(waitPoll):
		}
		ws, err = store.List(ctx, p)
	}
	if err != nil {
		return err
	}
	if a.output == "id" {
		for _, w := range ws {
			fmt.Fprintln(a.stdout, w.ID)
		}
		return nil
	}
	none := "no task waits"
	if len(p.States) > 0 {
		none = "no waits"
	}
	if done, err := listed(a, ws, none); done {
		return err
	}
	counts, err := store.ChildCounts(ctx, ws)
	if err != nil {
		return err
	}
	now := time.Now()
	tab := newTable(a.stdout, "ID", "TASK", "TENANT", "STEP", "KIND", "WAITS FOR", "DEADLINE", "AGE", "STATE")
	for _, w := range ws {
		state := w.State
		if w.ReplacedAt != nil {
			state += " (replaced)"
		}
		tab.row(strconv.FormatInt(w.ID, 10), strconv.FormatInt(w.TaskID, 10), truncate(w.Tenant, 20), w.Step, w.Kind, truncate(waitsFor(w, counts), 70),
			deadlineText(w, now), age(now.Sub(w.CreatedAt)), state)
	}
	if err := tab.flush(); err != nil {
		return err
	}
	if len(ws) == p.Limit {
		fmt.Fprintf(a.stderr, "more waits may follow: narrow with --task or --kind, or raise --limit\n")
	}
	return nil
}

// waitsFor says what w waits for, in a phrase: "payment.settled key
// order-7", "a timer of 30m", "every child (all, on failure fail): 1 of 2
// ended", counts saying how many children a children wait has.
func waitsFor(w waits.Wait, counts map[int64]waits.ChildCount) string {
	switch w.Kind {
	case waits.KindSignal:
		return w.Signal + " key " + w.Key
	case waits.KindTimer: // how long, which its deadline alone does not say once it ended
		return "a timer of " + render.Short(w.Deadline.Sub(w.CreatedAt))
	}
	var spec waits.ChildrenSpec
	if json.Unmarshal(w.Spec, &spec) != nil {
		return "its children"
	}
	which := "every child"
	if len(spec.Tasks) > 0 {
		ids := make([]string, len(spec.Tasks))
		for i, id := range spec.Tasks {
			ids[i] = strconv.FormatInt(id, 10)
		}
		which = "children " + strings.Join(ids, ",")
	}
	c := counts[w.ID]
	ended := fmt.Sprintf("%d of %d ended", c.Ended, c.Children)
	switch {
	case c.Children == 0 && w.State == waits.Waiting:
		ended = "none started yet"
	case c.Children == 0:
		ended = "no children"
	}
	return fmt.Sprintf("%s (%s, on failure %s): %s", which, spec.Mode, spec.OnFailure, ended)
}

func (a *app) endWaitCmd() *cobra.Command {
	var tenant, reason, as string
	cmd := &cobra.Command{
		Use:   "end-wait ID --reason TEXT",
		Short: "End a wait: its task wakes and the waiting call fails with the reason",
		Long: `End wait ID (see agentctl waits) for good: its task wakes, and the call that
waited fails with --reason, as a timeout would — a steps task's step fails
(its saga's compensations run when declared); an agent is told, and goes on.
--reason is required: the task's journal keeps it. To let the task go on
instead, send the signal it waits for (agentctl signal).

A wait that has ended already (its signal came, its timer fired, it timed
out, it was ended) is a conflict (exit 1) that says how, and nothing
changes. The end is recorded as yours (the OS user; --as names another).

With --output json it prints the wait as ended.`,
		Example:           `  agentctl end-wait 7 --reason "the order was cancelled by phone"`,
		Args:              oneWaitID,
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE: a.action(func(ctx context.Context, args []string) error {
			id, err := parseWaitID(args[0])
			if err != nil {
				return err
			}
			if strings.TrimSpace(reason) == "" {
				return usagef("end-wait needs --reason TEXT: the waiting call fails with it")
			}
			if as != "" && strings.TrimSpace(as) == "" {
				return usagef("--as names who ends the wait, not blanks")
			}
			return a.endWait(ctx, tenant, id, cmp.Or(strings.TrimSpace(as), operator.Decider()), strings.TrimSpace(reason))
		}),
	}
	tenantFlag(cmd, &tenant, "only if the wait's task belongs to this tenant")
	cmd.Flags().StringVar(&reason, "reason", "", "why it is ended (required: the waiting call fails with it)")
	cmd.Flags().StringVar(&as, "as", "", "who ends it, as recorded (default the OS user)")
	return cmd
}

func (a *app) endWait(ctx context.Context, tenant string, id int64, by, reason string) error {
	if _, err := a.store(ctx); err != nil {
		return err
	}
	w, ended, err := waits.NewStore(a.db.Pool).End(ctx, tenant, id, operator.Actor(by), reason)
	if err != nil {
		if ie, ok := err.(*agentledger.InvalidError); ok && ie.Field == "reason" {
			return agentledger.Invalid("--reason", "%s", ie.Problem)
		}
		return err
	}
	if !ended {
		return agentledger.Errorf(agentledger.CodeConflict, "wait %d of task %d is %s already: %s; nothing changed",
			w.ID, w.TaskID, w.State, endedHow(w))
	}
	if a.wantJSON() {
		return printJSON(a.stdout, w)
	}
	_, err = fmt.Fprintf(a.stdout, "wait %d ended by %s\ntask %d wakes and its call at step %s fails: %s\n",
		w.ID, w.EndedBy, w.TaskID, w.Step, w.EndReason)
	return err
}

// endedHow says how a wait that no longer waits ended.
func endedHow(w waits.Wait) string {
	switch w.State {
	case waits.Done:
		switch {
		case w.SignalID != nil:
			return fmt.Sprintf("signal %d came", *w.SignalID)
		case w.Kind == waits.KindTimer:
			return "fired"
		case w.Kind == waits.KindChildren:
			return childrenEnd(w.Result)
		}
		return "ended by " + w.EndedBy
	case waits.Waiting:
		return "it still waits"
	}
	how := cmp.Or(w.EndReason, w.State) + " (" + w.EndedBy + ")"
	if w.ReplacedAt != nil {
		how += ", replaced"
	}
	return how
}

// printWaits writes a task's waits, newest first; nothing for a task that
// never waited.
func printWaits(w io.Writer, ws []waits.Wait, counts map[int64]waits.ChildCount, now time.Time) error {
	if len(ws) == 0 {
		return nil
	}
	fmt.Fprintln(w, "Waits:")
	tab := newTable(w, "ID", "GEN", "STEP", "KIND", "WAITS FOR", "DEADLINE", "STATE")
	for _, x := range ws {
		state := x.State
		if x.State != waits.Waiting {
			state += ": " + endedHow(x)
		}
		tab.row(strconv.FormatInt(x.ID, 10), strconv.Itoa(int(x.Generation)), x.Step, x.Kind, truncate(waitsFor(x, counts), 70),
			deadlineText(x, now), truncate(state, 60))
	}
	return tab.flush()
}

// parseWaitID parses a wait id argument.
func parseWaitID(s string) (int64, error) {
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil || id <= 0 {
		return 0, usagef("wait id must be a positive integer, not %q", s)
	}
	return id, nil
}

// oneWaitID accepts exactly one argument, a wait id.
func oneWaitID(cmd *cobra.Command, args []string) error {
	if len(args) != 1 {
		return usagef("%s takes one wait ID, got %d arguments", commandName(cmd), len(args))
	}
	return nil
}

// deadlineText is a wait's deadline, and how far off while it still waits:
// an ended wait's deadline is a time, no longer a countdown.
func deadlineText(w waits.Wait, now time.Time) string {
	if w.State != waits.Waiting {
		return stamp(w.Deadline)
	}
	return stamp(w.Deadline) + " (" + relative(w.Deadline, now) + ")"
}

// childrenEnd says how a children wait ended, from its result: the child
// that succeeded first (mode any), the first that failed, or all ended
// well. Children it did not wait for may still run.
func childrenEnd(result json.RawMessage) string {
	var r waits.ChildrenResult
	_ = json.Unmarshal(result, &r)
	if r.First != nil {
		return fmt.Sprintf("child %d succeeded first", *r.First)
	}
	if c, failed := waits.Failed(result); failed {
		return fmt.Sprintf("child %d ended %s", c.TaskID, c.State)
	}
	if len(r.Children) == 1 {
		return "its child succeeded"
	}
	return fmt.Sprintf("its %d children succeeded", len(r.Children))
}
