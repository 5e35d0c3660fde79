package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/operator"
	"github.com/agentledger/agentledger/render"
)

func (a *app) compensateCmd() *cobra.Command {
	var (
		tenant, as string
		yes        bool
	)
	cmd := &cobra.Command{
		Use:   "compensate ID [--yes] [--as NAME]",
		Short: "Undo the completed effects of a finished or parked task",
		Long: `Compensate undoes the completed effects of a task that no worker holds
(succeeded, dead, cancelled, needs_attention): each effect whose step declared
a compensation is undone by it, newest first, and the task ends compensated
(or needs_attention if an effect cannot be undone; a replay then goes on
undoing).

It first lists the effects it will undo and asks for confirmation on the
terminal; --yes skips the question, and is needed when standard input is not
a terminal (exit 2 without it). A task with nothing to undo is a conflict
(exit 1), as is one already undoing or undone.

--as names who asks, recorded beside the compensation and shown by
agentctl show ("it was asked to undo its effects by operator:alice");
default the OS user, as cancel records it.

With --output json it prints {"task": {...}, "requested_by": "operator:alice",
"undoes": [...]}.`,
		Example: `  agentctl compensate 42
  agentctl compensate 42 --yes --as alice -o json`,
		Args:              oneID,
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE: a.action(func(ctx context.Context, args []string) error {
			if err := checkAs(strings.TrimSpace(as)); err != nil {
				return err
			}
			return a.compensate(ctx, tenant, actor(as), args[0], yes)
		}),
	}
	tenantFlag(cmd, &tenant, "only if the task belongs to this tenant")
	cmd.Flags().BoolVar(&yes, "yes", false, "do not ask for confirmation (needed when standard input is not a terminal)")
	cmd.Flags().StringVar(&as, "as", "", "who asks, recorded beside the compensation (default: the OS user)")
	return cmd
}

// compensate undoes task arg's completed effects on by's request
// (operator.Actor).
func (a *app) compensate(ctx context.Context, tenant, by, arg string, yes bool) error {
	id, err := parseID(arg)
	if err != nil {
		return err
	}
	svc, err := a.operator(ctx)
	if err != nil {
		return err
	}
	plan, err := svc.PlanCompensation(ctx, tenant, id)
	if err != nil {
		return err
	}
	if len(plan.Undos) == 0 {
		return newError(fmt.Sprintf("task %d (%s): nothing to compensate: none of its completed effects declared a compensation",
			id, plan.Task.State), agentledger.ErrConflict)
	}
	// The preview is for people; with JSON it goes to stderr.
	info := a.stdout
	if a.wantJSON() {
		info = a.stderr
	}
	if err := printUndos(info, plan); err != nil {
		return err
	}
	if !yes {
		question := fmt.Sprintf("Undo %s of task %d?", plural(int64(len(plan.Undos)), "effect"), id)
		if err := a.confirm(question, "compensate", "compensated"); err != nil {
			return err
		}
	}
	t, err := svc.CompensateBy(ctx, tenant, id, by)
	if err != nil {
		return err
	}
	if a.wantJSON() {
		return printJSON(a.stdout, struct {
			Task        *agentledger.Task `json:"task"`
			RequestedBy string            `json:"requested_by"`
			Undoes      []operator.Undo   `json:"undoes"`
		}{t, by, plan.Undos})
	}
	_, err = fmt.Fprintf(a.stdout, "task %d is %s: a worker undoes its effects, newest first\n", id, t.State)
	return err
}

// printUndos writes what a compensation will undo, newest first.
func printUndos(w io.Writer, p *operator.UndoPlan) error {
	fmt.Fprintf(w, "Task %d (%s): the compensation undoes, newest first:\n", p.Task.ID, p.Task.State)
	tab := newTable(w, "STEP", "OPERATION", "STATE", "UNDONE BY", "RESULT")
	unknown := false
	for _, u := range p.Undos {
		res := "-"
		if len(u.Result) > 0 {
			res = truncate(string(compact(u.Result)), 60)
		}
		tab.row(u.Step, u.Operation, string(u.State), u.Tool, res)
		unknown = unknown || u.State != ledger.StateCompleted
	}
	if err := tab.flush(); err != nil {
		return err
	}
	// The calls themselves: what an operator checks before --yes.
	for _, u := range p.Undos {
		if len(u.Args) > 0 {
			fmt.Fprintf(w, "%s sends %s\n", u.Step, render.CallText(u.Tool, u.Args))
		}
	}
	if unknown {
		_, err := fmt.Fprintf(w, "an effect of unknown outcome parks the compensation until it is resolved (agentctl resolve %d)\n", p.Task.ID)
		return err
	}
	return nil
}
