package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/operator"
	"github.com/agentledger/agentledger/saga"
)

func (a *app) replayCmd() *cobra.Command {
	var (
		tenant string
		dryRun bool
	)
	cmd := &cobra.Command{
		Use:   "replay ID",
		Short: "Run a finished or parked task again with the same intent",
		Long: `Replay runs a task that no worker holds (succeeded, dead, cancelled,
needs_attention) again in the same generation: every effect the ledger has
completed is served from it, only unfinished effects run. --dry-run prints,
for each effect of the journal, whether it will be served from the ledger or
will run, and changes nothing.

A task whose ledger rows retention has removed cannot be replayed (its
effects would run again): re-run it as a new intent (agentctl rerun). Nor
can a task with an effect of unknown outcome (exit 1): the replay would
stop there again; agentctl resolve settles it, and replays a task that
needs attention. Nor can a steps task whose call was not approved in its
generation (denied, timed out, or withdrawn by a cancel; exit 1): it would
fail at that step again, asking nobody; agentctl rerun asks anew. Another
kind is replayed, with a warning that it meets the same refusal there.`,
		Example: `  agentctl replay 42 --dry-run
  agentctl replay 42`,
		Args: oneID,
		RunE: a.action(func(ctx context.Context, args []string) error { return a.replay(ctx, tenant, args[0], dryRun) }),
	}
	tenantFlag(cmd, &tenant, "only if the task belongs to this tenant")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "show what the replay would serve and run; change nothing")
	return cmd
}

// plannedEffect is one line of a replay preview.
type plannedEffect struct {
	Step      string       `json:"step"`
	Operation string       `json:"operation"`
	Class     ledger.Class `json:"class"`
	State     ledger.State `json:"state"`
	Plan      string       `json:"plan"` // "served from ledger", "will run", "needs resolution", "refused"
	Refused   string       `json:"refused,omitempty"`
}

// planWords is a plan with the command that resolves an effect.
func planWords(p ledger.Plan) string {
	if p == ledger.PlanResolve {
		return string(p) + " (agentctl resolve)"
	}
	return string(p)
}

func (a *app) replay(ctx context.Context, tenant, arg string, dryRun bool) error {
	id, err := parseID(arg)
	if err != nil {
		return err
	}
	svc, err := a.operator(ctx)
	if err != nil {
		return err
	}
	var p *operator.Preview
	if dryRun {
		p, err = svc.Preview(ctx, tenant, id)
	} else {
		p, err = svc.Replay(ctx, tenant, id)
	}
	if err != nil {
		return err
	}
	t := p.Task
	plan := make([]plannedEffect, len(p.Effects))
	for i, e := range p.Effects {
		plan[i] = plannedEffect{Step: e.Step, Operation: e.Operation, Class: e.Class, State: e.State, Plan: planWords(e.Plan),
			Refused: e.Refused}
		if e.Refused != "" {
			plan[i].Plan = "refused: not granted"
		}
	}
	if a.wantJSON() {
		return printJSON(a.stdout, struct {
			Task    *agentledger.Task `json:"task"`
			DryRun  bool              `json:"dry_run"`
			Effects []plannedEffect   `json:"effects"`
		}{t, dryRun, plan})
	}
	switch {
	case t.Compensation != "" && !dryRun:
		fmt.Fprintf(a.stdout, "task %d is compensating again (generation %d): the replay goes on undoing its effects\n", id, t.Generation)
	case !dryRun:
		fmt.Fprintf(a.stdout, "task %d queued for replay (generation %d)\n", id, t.Generation)
	}
	if t.Compensation != "" {
		// A parked compensation: the replay undoes, it does not redo.
		fmt.Fprintf(a.stdout, "The replay continues the task's compensation, not its forward path: compensations recorded so far "+
			"are served, a keyed one that failed is sent again, the rest run, newest effect first. Effects recorded (%d):\n", len(plan))
	} else {
		fmt.Fprintf(a.stdout, "Effects recorded so far (%d); anything after them runs for the first time:\n", len(plan))
	}
	tab := newTable(a.stdout, "STEP", "OPERATION", "CLASS", "STATE", "ON REPLAY")
	for _, p := range plan {
		tab.row(p.Step, p.Operation, string(p.Class), string(p.State), p.Plan)
	}
	if err := tab.flush(); err != nil {
		return err
	}
	for _, p := range plan {
		if p.Refused == "" {
			continue
		}
		if _, undo := saga.Undoes(p.Step); undo {
			fmt.Fprintf(a.stdout, "%s: %s; the compensation parks the task again there until the grant allows it\n", p.Step, p.Refused)
		} else {
			fmt.Fprintf(a.stdout, "%s: %s; the replay stops there and performs nothing more\n", p.Step, p.Refused)
		}
		break
	}
	// As the console's dialog warns: an effect of unknown outcome is not
	// guessed at, so the replay stops at it again.
	for _, e := range p.Effects {
		if e.Plan == ledger.PlanResolve {
			fmt.Fprintf(a.stderr, "agentctl: warning: the effect at %s has an unknown outcome: the replay parks the task in "+
				"needs_attention again until it is resolved (agentctl resolve %d --step %s --done|--retry --note …)\n", e.Step, id, e.Step)
			break
		}
	}
	// A decided request stands for its generation: the replay is told the
	// same denial, timeout or withdrawal, and asks nobody.
	refusedCalls(ctx, a, tenant, t)
	if dryRun {
		_, err = fmt.Fprintln(a.stdout, "dry run: nothing changed")
	}
	return err
}

// refusedCalls warns of the calls of t's generation that a person denied,
// or that timed out or were withdrawn unapproved (operator.RefusedCalls):
// a replay or a retry meets the same refusal there; a re-run, a new
// intent, asks again.
func refusedCalls(ctx context.Context, a *app, tenant string, t *agentledger.Task) {
	rs, err := operator.New(a.db.Pool).RefusedCalls(ctx, tenant, t)
	if err != nil {
		return
	}
	for _, r := range rs {
		fmt.Fprintf(a.stderr, "agentctl: warning: the call at %s was not approved (approval request %d %s): it is refused again "+
			"there, and nobody is asked; agentctl rerun %d --yes asks anew, as a new intent\n", r.Step, r.ID, operator.RefusedHow(r), t.ID)
	}
}

func (a *app) rerunCmd() *cobra.Command {
	var (
		tenant       string
		yes, despite bool
	)
	cmd := &cobra.Command{
		Use:   "rerun ID --yes [--despite-unknown]",
		Short: "Run a task again as a new intent: every effect runs again",
		Long: `Rerun runs a task that no worker holds again as a new intent: its
generation is bumped, so every effect key changes and EVERY effect runs again
— HTTP calls, child tasks, notifications, model calls. It needs --yes;
without it rerun says what it would do and exits 2. To run only unfinished
effects, use agentctl replay.

A task with an effect whose outcome is not known (unknown, or pending with
no attempt to finish it: the call may have gone out) is refused, naming
the steps: settle them with agentctl resolve first, or re-run it
--despite-unknown when a second call is what you want.`,
		Example: `  agentctl rerun 42 --yes`,
		Args:    oneID,
		RunE:    a.action(func(ctx context.Context, args []string) error { return a.rerun(ctx, tenant, args[0], yes, despite) }),
	}
	tenantFlag(cmd, &tenant, "only if the task belongs to this tenant")
	cmd.Flags().BoolVar(&yes, "yes", false, "confirm: every effect of the task runs again")
	cmd.Flags().BoolVar(&despite, "despite-unknown", false, "re-run even though an effect's outcome is not known: it may be performed twice")
	return cmd
}

func (a *app) rerun(ctx context.Context, tenant, arg string, yes, despite bool) error {
	id, err := parseID(arg)
	if err != nil {
		return err
	}
	if !yes {
		return withHint(usagef("rerun would run every effect of task %d again as a new intent", id),
			"re-run with --yes to proceed, or use agentctl replay to run only unfinished effects")
	}
	svc, err := a.operator(ctx)
	if err != nil {
		return err
	}
	rerun := svc.Rerun
	if despite {
		rerun = svc.RerunAnyway
	}
	t, err := rerun(ctx, tenant, id)
	var unsettled *operator.UnsettledError
	if errors.As(err, &unsettled) {
		hint := fmt.Sprintf("a pending call is taken over by agentctl replay %d (a keyed one is sent again under its key, "+
			"an unsafe one becomes unknown for you to resolve)", id)
		if len(unsettled.Unknown) > 0 {
			hint = fmt.Sprintf("settle it first: agentctl resolve %d --step %s (--done: it happened | --retry: it did not) --note …",
				id, unsettled.Unknown[0])
		}
		return withHint(err, hint+"; or re-run --despite-unknown")
	}
	if err != nil {
		return err
	}
	if a.wantJSON() {
		return printJSON(a.stdout, struct {
			Task *agentledger.Task `json:"task"`
		}{t})
	}
	_, err = fmt.Fprintf(a.stdout, "task %d queued as a new intent (generation %d): every effect runs again\n", id, t.Generation)
	return err
}
