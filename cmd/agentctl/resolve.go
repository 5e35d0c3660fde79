package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/operator"
)

func (a *app) resolveCmd() *cobra.Command {
	var (
		tenant, step, note string
		done, retry        bool
	)
	cmd := &cobra.Command{
		Use:   "resolve ID [--step STEP] (--done | --retry) --note TEXT",
		Short: "Settle an effect of unknown outcome and resume its task",
		Long: `An unsafe effect (one with no idempotency key and no look-up) whose attempt
died after sending it has an unknown outcome: the task waits in
needs_attention. Check the target by hand, then either mark the effect done
(--done: it happened; it is served from the ledger from now on) or allow one
more performance (--retry: it did not happen). --note says why and is kept in
the journal. The task is then replayed: effects completed before are served,
the rest run.

A saga's compensation that failed for good (refused, or one that could not
be sent: its journal row is failed) is resolved with --step
compensate/tool/N --done once you undid the effect by hand; the task goes
on undoing the rest. One still pending is not: it may have been sent, and a
replay lets the ledger decide.

--step names the effect by its step path, as agentctl show lists it; it
may be left out when the task has one effect of unknown outcome.`,
		Example: `  agentctl resolve 42 --step tool/1 --done --note "wire 77 seen in the bank portal"
  agentctl resolve 42 --step tool/1 --retry --note "bank has no such wire"`,
		Args: oneID,
		RunE: a.action(func(ctx context.Context, args []string) error {
			return a.resolve(ctx, tenant, args[0], step, note, done, retry)
		}),
	}
	tenantFlag(cmd, &tenant, "only if the task belongs to this tenant")
	cmd.Flags().StringVar(&step, "step", "", "step path of the unknown effect, as agentctl show lists it (e.g. tool/1); default: the task's only one")
	cmd.Flags().StringVar(&note, "note", "", "why (required)")
	cmd.Flags().BoolVar(&done, "done", false, "the effect happened")
	cmd.Flags().BoolVar(&retry, "retry", false, "the effect did not happen: perform it once more")
	return cmd
}

func (a *app) resolve(ctx context.Context, tenant, arg, step, note string, done, retry bool) error {
	id, err := parseID(arg)
	if err != nil {
		return err
	}
	switch {
	case done == retry:
		return usagef("choose one of --done or --retry")
	case note == "":
		return usagef("--note is required: say why the effect is resolved this way")
	}
	svc, err := a.operator(ctx)
	if err != nil {
		return err
	}
	if step == "" {
		if step, err = onlyUnknown(ctx, svc, claims.New(a.db.Pool), tenant, id); err != nil {
			return err
		}
	}
	out, err := svc.ResolveTask(ctx, tenant, id, step, operator.Resolution{Done: done, Note: note})
	t := out.Task
	var none *operator.NoUnknownEffectError
	if errors.As(err, &none) {
		return withHint(err, fmt.Sprintf("agentctl show %d lists its journal", id))
	}
	if err != nil {
		return err
	}
	how := operator.Resolved(t, done)
	if a.wantJSON() {
		return printJSON(a.stdout, struct {
			Task *agentledger.Task `json:"task"`
			Step string            `json:"step"`
			Done bool              `json:"done"`
		}{t, step, done})
	}
	_, err = fmt.Fprintf(a.stdout, "effect %s of task %d %s; %s\n", step, id, how, out.Where())
	return err
}

// onlyUnknown is the step of task id's one effect of unknown outcome, the
// step resolve settles when --step is not given; an error when it has
// none or several.
func onlyUnknown(ctx context.Context, svc *operator.Service, s *claims.Store, tenant string, id int64) (string, error) {
	steps, err := svc.UnknownEffects(ctx, tenant, id)
	if err != nil {
		return "", err
	}
	switch len(steps) {
	case 1:
		return steps[0], nil
	case 0:
		hint := fmt.Sprintf("agentctl show %d lists its journal; a compensation that failed for good is resolved with --step", id)
		if t, err := s.Get(ctx, tenant, id); err == nil && t.State == agentledger.StateNeedsAttention && t.Compensation == "" {
			hint = parkedHint(id)
		}
		return "", withHint(newError(fmt.Sprintf("task %d has no effect of unknown outcome", id), agentledger.ErrNotFound), hint)
	}
	return "", usagef("--step is required: task %d has %d effects of unknown outcome, at %s", id, len(steps), strings.Join(steps, ", "))
}
