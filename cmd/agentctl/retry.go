package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/operator"
)

func (a *app) retryCmd() *cobra.Command {
	var (
		tenant string
		f      bulkFlags
	)
	cmd := &cobra.Command{
		Use:   "retry ID | --all [--queue Q] [--kind K] [--tenant T] [--since T] [--until T] [--yes]",
		Short: "Retry dead tasks: effects they completed are served from the ledger",
		Long: `Retry runs a dead task again from attempt 1 in the same generation: every
effect the ledger completed for it is served from the ledger, and so is one
that failed, but for the last, when it changed nothing (a wait that timed
out or whose child failed, a read), which runs again; the effects that did
not complete run. Only a dead task can be retried (exit 1
otherwise): a task that succeeded, was cancelled or needs attention is run
again with agentctl replay (same generation) or agentctl rerun (a new
intent). A task whose ledger rows retention has removed cannot be retried,
since its effects would run again: re-run it. Nor can a steps task whose
call failed for good (a 4xx) or was not approved (denied, timed out): its
failure or its decision is recorded, and the retry would end there the
same way; re-run it to call it (or ask) anew.

With --all it retries every dead task the filter selects (--queue, --kind,
--tenant, and --since/--until on the creation time: RFC 3339 times, dates,
or durations meaning that long ago, e.g. 2h or 7d). It first counts them
and asks for confirmation on the terminal; --yes skips the question, and is
needed when standard input is not a terminal (exit 2 without it). Tasks that
cannot be retried are skipped, with the reason. Past a thousand tasks, how
far it is goes to stderr after each thousand.

With --output json it prints {"task": {...}}, or for --all
{"action": "retry", "matched": N, "done": [ids], "skipped": [{"id", "reason"}]}.`,
		Example: `  agentctl retry 42
  agentctl retry --all --queue emails --since 2h
  agentctl retry --all --kind steps --until 2026-01-02T00:00:00Z --yes -o json`,
		Args:              f.args,
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE: a.action(func(ctx context.Context, args []string) error {
			if f.all {
				return a.bulk(ctx, tenant, &f, []agentledger.TaskState{agentledger.StateDead}, bulkAction{
					verb: "retry", past: "retried", noun: "dead",
					after: "each runs again in its generation: effects it completed are served from the ledger",
					do: func(ctx context.Context, svc *operator.Service, p claims.ListParams) (operator.BulkResult, error) {
						return svc.RetryAll(ctx, p)
					},
				})
			}
			return a.retry(ctx, tenant, args[0])
		}),
	}
	tenantFlag(cmd, &tenant, "only if the task belongs to this tenant; with --all, only this tenant's tasks")
	addBulkFlags(cmd, &f, "retry")
	return cmd
}

func (a *app) retry(ctx context.Context, tenant, arg string) error {
	id, err := parseID(arg)
	if err != nil {
		return err
	}
	s, err := a.store(ctx)
	if err != nil {
		return err
	}
	svc := operator.New(a.db.Pool)
	t, err := svc.Retry(ctx, tenant, id)
	switch {
	case errors.As(err, new(*operator.ServedFailureError)), errors.As(err, new(*operator.RefusedStepError)):
		return err
	case errors.Is(err, agentledger.ErrConflict):
		return retryConflict(ctx, s, svc, tenant, id, err)
	case err != nil:
		return err
	}
	if a.wantJSON() {
		return printJSON(a.stdout, struct {
			Task *agentledger.Task `json:"task"`
		}{t})
	}
	_, err = fmt.Fprintf(a.stdout, "task %d queued for retry (generation %d): effects it completed are served from the ledger\n",
		id, t.Generation)
	refusedCalls(ctx, a, tenant, t)
	return err
}

// parkedHint is what to do with a task that needs attention with no effect
// of unknown outcome: a gate (an interceptor's tools.Park, a check before a
// call) stopped it for a person, and its last error says why.
func parkedHint(id int64) string {
	return fmt.Sprintf("nothing of it is of unknown outcome: it was stopped for a person, and its last error says why (agentctl show %d); "+
		"once that is dealt with, agentctl replay %d runs it again (completed effects served from the ledger), or agentctl cancel %d stops it", id, id, id)
}

// retryConflict words a refused retry: the task is not dead (say what it
// is and what runs it again), or retention removed its ledger rows.
func retryConflict(ctx context.Context, s *claims.Store, svc *operator.Service, tenant string, id int64, err error) error {
	cur, gerr := s.Get(ctx, tenant, id)
	if gerr != nil {
		return err
	}
	switch cur.State {
	case agentledger.StateDead:
		return withHint(newError(fmt.Sprintf("task %d cannot be retried: retention removed its ledger rows, so its effects would run again", id), err),
			fmt.Sprintf("run every effect again as a new intent: agentctl rerun %d --yes", id))
	case agentledger.StateQueued, agentledger.StateRetrying, agentledger.StateRunning:
		return withHint(newError(fmt.Sprintf("task %d is %s, not dead: only a dead task can be retried", id, cur.State), err),
			fmt.Sprintf("it will run without help; agentctl show %d follows it", id))
	case agentledger.StateNeedsAttention:
		hint := fmt.Sprintf("settle its unknown effect with agentctl resolve, which replays it (agentctl show %d names it)", id)
		if unknown, uerr := svc.UnknownEffects(ctx, tenant, id); uerr == nil && len(unknown) == 0 {
			hint = parkedHint(id)
		}
		return withHint(newError(fmt.Sprintf("task %d is %s, not dead: only a dead task can be retried", id, cur.State), err), hint)
	}
	return withHint(newError(fmt.Sprintf("task %d is %s, not dead: only a dead task can be retried", id, cur.State), err),
		fmt.Sprintf("agentctl replay %d runs it again in the same generation (completed effects served from the ledger); "+
			"agentctl rerun %d --yes runs every effect again as a new intent", id, id))
}
