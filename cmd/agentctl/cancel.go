package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/agentledger/agentledger"
)

func (a *app) cancelCmd() *cobra.Command {
	var tenant string
	cmd := &cobra.Command{
		Use:   "cancel ID",
		Short: "Cancel a task",
		Long: `Cancel a task. A task that is not running is cancelled at once. A running
task is flagged: its attempt sees the flag at its next heartbeat, stops and
records the cancellation. A finished task (succeeded, dead, cancelled) cannot
be cancelled: exit 1.

With --output json it prints {"task": {...}, "immediate": true|false}.`,
		Example: `  agentctl cancel 42`,
		Args:    oneID,
		RunE:    a.action(func(ctx context.Context, args []string) error { return a.cancel(ctx, tenant, args[0]) }),
	}
	tenantFlag(cmd, &tenant, "only if the task belongs to this tenant")
	return cmd
}

// cancelResult is cancel's JSON output. Immediate is false when the task
// was running and its attempt has yet to see the request.
type cancelResult struct {
	Task      *agentledger.Task `json:"task"`
	Immediate bool              `json:"immediate"`
}

func (a *app) cancel(ctx context.Context, tenant, arg string) error {
	id, err := parseID(arg)
	if err != nil {
		return err
	}
	s, err := a.store(ctx)
	if err != nil {
		return err
	}
	t, err := s.Cancel(ctx, tenant, id)
	switch {
	case errors.Is(err, agentledger.ErrNotFound):
		return taskNotFound(id, tenant, err)
	case errors.Is(err, agentledger.ErrConflict):
		// Only the wording needs the state; the decision was the database's.
		if cur, gerr := s.Get(ctx, tenant, id); gerr == nil {
			return newError(fmt.Sprintf("task %d is already %s: nothing to cancel", id, cur.State), err)
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
	_, err = fmt.Fprintf(a.stdout,
		"task %d is running (attempt %d, worker %s): cancel requested; the attempt stops at its next heartbeat\n",
		id, t.Attempt, t.LeaseOwner)
	return err
}
