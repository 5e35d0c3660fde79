package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/operator"
)

func (a *app) cancelCmd() *cobra.Command {
	var (
		tenant, as string
		f          bulkFlags
	)
	cmd := &cobra.Command{
		Use:   "cancel ID | --all [--state S] [--queue Q] [--kind K] [--tenant T] [--since T] [--until T] [--yes] [--as NAME]",
		Short: "Cancel a task, or every unfinished task of a filter",
		Long: `Cancel a task. A task that is not running is cancelled at once. A running
task is flagged, and its daemon told at once: the attempt stops before its
next call (a call in flight finishes and is recorded) and records the
cancellation. A daemon that only polls (--poll-only, --pgbouncer) sees the
flag at the attempt's next heartbeat. A finished task (succeeded, dead, cancelled) cannot
be cancelled: exit 1. (A task waiting for a decision, a signal, a timer or
its children is cancelled at once.)

With --all it cancels every unfinished task (queued, waiting — their approval
requests withdrawn, their waits ended —, retrying, running, needs_attention;
--state narrows them) the filter selects: --queue, --kind,
--tenant, and --since/--until on the creation time (RFC 3339 times, dates,
or durations meaning that long ago, e.g. 2h or 7d). It first counts them and
asks for confirmation on the terminal; --yes skips the question, and is
needed when standard input is not a terminal (exit 2 without it). Tasks that
finished meanwhile are skipped, with the reason. --as names who cancels, in
each task's last error, its withdrawn requests and its ended waits
("cancelled by operator:alice"; default the OS user, as end-wait records
it). Each task is its own
transition (about a millisecond): past a thousand, how far it is goes to
stderr after each thousand.

With --output json it prints {"task": {...}, "immediate": true|false}, or for
--all {"action": "cancel", "matched": N, "done": [ids], "skipped": [{"id", "reason"}]}.`,
		Example: `  agentctl cancel 42
  agentctl cancel --all --queue emails --state queued,retrying
  agentctl cancel --all --kind steps --since 30m --yes`,
		Args:              f.args,
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE: a.action(func(ctx context.Context, args []string) error {
			if f.all {
				states, err := parseStates("--state", f.states, cancellable)
				if err != nil {
					return err
				}
				if len(states) == 0 {
					states = cancellable
				}
				noun := "unfinished"
				if len(f.states) > 0 {
					noun = joinStates(states, "/")
				}
				return a.bulk(ctx, tenant, &f, states, bulkAction{
					verb: "cancel", past: "cancelled", noun: noun,
					after: "queued tasks are cancelled; running ones stop before their next call",
					do: func(ctx context.Context, svc *operator.Service, p claims.ListParams) (operator.BulkResult, error) {
						if err := checkAs(strings.TrimSpace(as)); err != nil {
							return operator.BulkResult{}, err
						}
						return svc.CancelAllBy(ctx, p, actor(as))
					},
				})
			}
			if err := checkAs(strings.TrimSpace(as)); err != nil {
				return err
			}
			return a.cancel(ctx, tenant, actor(as), args[0])
		}),
	}
	tenantFlag(cmd, &tenant, "only if the task belongs to this tenant; with --all, only this tenant's tasks")
	addBulkFlags(cmd, &f, "cancel")
	cmd.Flags().StringSliceVar(&f.states, "state", nil,
		"with --all: only tasks in these states (repeat or comma-separate): "+joinStates(cancellable, ", "))
	_ = cmd.RegisterFlagCompletionFunc("state", completeStates(cancellable))
	cmd.Flags().StringVar(&as, "as", "", "who cancels, recorded in the task's last error and its withdrawn requests (default: the OS user)")
	return cmd
}

// actor is who cancels, or asks for a compensation: --as, else the OS
// user, recorded as an operator (operator.Actor), as end-wait records it.
func actor(as string) string {
	return operator.Actor(cmp.Or(strings.TrimSpace(as), operator.Decider()))
}

// checkAs refuses a --as name no one could read back: control
// characters, invalid UTF-8, more than 128 characters.
func checkAs(name string) error {
	if utf8.RuneCountInString(name) > 128 || !utf8.ValidString(name) ||
		strings.ContainsFunc(name, func(r rune) bool { return unicode.IsControl(r) }) {
		return usagef("--as must be a name of printable characters, at most 128")
	}
	return nil
}

// cancellable are the states cancel --all acts on: the unfinished ones.
var cancellable = []agentledger.TaskState{agentledger.StateQueued, agentledger.StateWaiting, agentledger.StateRetrying,
	agentledger.StateRunning, agentledger.StateNeedsAttention}

// cancelResult is cancel's JSON output. Immediate is false when the task
// was running and its attempt has yet to see the request.
type cancelResult struct {
	Task      *agentledger.Task `json:"task"`
	Immediate bool              `json:"immediate"`
}

func (a *app) cancel(ctx context.Context, tenant, by, arg string) error {
	id, err := parseID(arg)
	if err != nil {
		return err
	}
	s, err := a.store(ctx)
	if err != nil {
		return err
	}
	t, err := operator.New(a.db.Pool).CancelBy(ctx, tenant, id, by)
	switch {
	case errors.Is(err, agentledger.ErrConflict):
		// Only the wording needs the state; the decision was the database's.
		// A task undoing its effects is not finished: the store says why.
		if cur, gerr := s.Get(ctx, tenant, id); gerr == nil && cur.State.Finished() {
			return newError(fmt.Sprintf("task %d already finished (%s): nothing to cancel", id, cur.State), err)
		}
		return err
	case err != nil:
		return err
	}
	immediate := t.State == agentledger.StateCancelled
	if a.wantJSON() {
		return printJSON(a.stdout, cancelResult{Task: t, Immediate: immediate})
	}
	if immediate {
		_, err = fmt.Fprintf(a.stdout, "task %d cancelled\n", id)
		return err
	}
	if t.State == agentledger.StateCompensating {
		// Effects declared how they are undone: cancelling undoes them
		// first, newest first, and the task ends compensated.
		_, err = fmt.Fprintf(a.stdout, "task %d is undoing its effects (compensating), then ends compensated\n", id)
		return err
	}
	who := fmt.Sprintf("attempt %d", t.Attempt)
	if t.LeaseOwner != "" {
		who += ", worker " + t.LeaseOwner
	}
	_, err = fmt.Fprintf(a.stdout, "task %d is %s (%s): cancel requested; the attempt stops before its next call\n",
		id, t.State, who)
	return err
}
