package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentledger/agentledger"
)

// waitPoll is how often wait reads the task: nothing signals agentctl when
// a task changes state, and a quarter second is quick for a person.
const waitPoll = 250 * time.Millisecond

func (a *app) waitCmd() *cobra.Command {
	var (
		tenant  string
		timeout time.Duration
	)
	cmd := &cobra.Command{
		Use:   "wait ID [--timeout 2m]",
		Short: "Wait until a task finished or needs attention",
		Long: `Wait until the task has succeeded, is dead or cancelled, or needs an
operator's attention, printing each state it passes through on standard
error and the final one on standard output. Exit 0 when it succeeded; 1 when it ended otherwise, needs attention,
or is still unfinished after --timeout (0: no limit).

With --output json it prints the task as "agentctl show" does.`,
		Example: `  agentctl wait 42
  ID=$(agentctl submit -o id --kind sleep --payload '{"ms": 500}') && agentctl wait "$ID"`,
		Args:              oneID,
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE: a.action(func(ctx context.Context, args []string) error {
			id, err := parseID(args[0])
			if err != nil {
				return err
			}
			if timeout < 0 {
				return usagef("--timeout must be 0 (no limit) or positive, not %s", timeout)
			}
			return a.wait(ctx, tenant, id, timeout)
		}),
	}
	tenantFlag(cmd, &tenant, "the task's tenant (default: any)")
	cmd.Flags().DurationVar(&timeout, "timeout", 2*time.Minute, "give up after this long (0: no limit)")
	return cmd
}

func (a *app) wait(ctx context.Context, tenant string, id int64, timeout time.Duration) error {
	s, err := a.store(ctx)
	if err != nil {
		return err
	}
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	var last agentledger.TaskState
	for {
		t, err := s.Get(ctx, tenant, id)
		if errors.Is(err, context.DeadlineExceeded) && timeout > 0 {
			return newError(fmt.Sprintf("task %d is still %s after %s", id, last, timeout), agentledger.ErrConflict)
		}
		if err != nil {
			return err
		}
		done := t.State.Finished() || t.State == agentledger.StateNeedsAttention
		if t.State != last && !done { // the final state goes to stdout
			fmt.Fprintf(a.stderr, "task %d: %s\n", id, t.State)
		}
		last = t.State
		if done {
			if a.wantJSON() {
				if err := printJSON(a.stdout, t); err != nil {
					return err
				}
			} else {
				fmt.Fprintf(a.stdout, "task %d %s\n", id, t.State)
			}
			if t.State != agentledger.StateSucceeded {
				return newError(fmt.Sprintf("task %d ended %s, not succeeded: agentctl show %d says why", id, t.State, id), agentledger.ErrConflict)
			}
			return nil
		}
		select {
		case <-ctx.Done():
			if timeout > 0 && errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return newError(fmt.Sprintf("task %d is still %s after %s", id, last, timeout), agentledger.ErrConflict)
			}
			return ctx.Err()
		case <-time.After(waitPoll):
		}
	}
}
