package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/approvals"
	"github.com/agentledger/agentledger/operator"
	"github.com/agentledger/agentledger/steps"
)

func (a *app) approvalsCmd() *cobra.Command {
	var (
		tenant string
		all    bool
		task   int64
		limit  int
		wait   time.Duration
	)
	cmd := &cobra.Command{
		Use:   "approvals [--all] [--task ID]",
		Short: "List the approval requests waiting for a decision",
		Long: `List approval requests: an effect declared as needing approval (a step's
"approve", an agent tool's, the daemon's policy) waits, its task holding no
lease, until a person approves or denies it or it times out. By default the
pending requests, the longest waiting first: the call each would perform, how
long it has waited, who may decide (Slack users and groups; an operator
always may) and when it times out. --all lists every state with the
decision: the pending requests first, the longest waiting at the top, then
the decided ones, newest first.

--wait D waits up to D for a request to list, for a script that has just
submitted a task with a gated step (exit 1 if none came).

Read a request in full with agentctl approval ID; decide it with agentctl
approve ID or agentctl deny ID --reason TEXT.

With --output json it prints the requests as an array; with --output id their
ids, one a line (none: no output), for scripts.`,
		Example: `  agentctl approvals
  agentctl approvals --task 42 --all -o json`,
		Args:              cobra.NoArgs,
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE: a.action(func(ctx context.Context, _ []string) error {
			switch {
			case task < 0:
				return usagef("--task must be a positive task id, not %d", task)
			case limit < 1:
				return usagef("--limit must be at least 1, not %d", limit)
			case wait < 0:
				return usagef("--wait must be 0 (do not wait) or positive, not %s", wait)
			}
			p := approvals.ListParams{Tenant: tenant, TaskID: task, Limit: limit}
			if all {
				p.States = operator.ApprovalStates
			}
			return a.approvals(ctx, p, wait)
		}),
	}
	tenantFlag(cmd, &tenant, "only the requests of this tenant's tasks")
	cmd.Flags().BoolVar(&all, "all", false, "every request, decided ones too (after the pending ones, newest first)")
	cmd.Flags().Int64Var(&task, "task", 0, "only the requests of this task")
	cmd.Flags().IntVar(&limit, "limit", 100, "at most this many requests")
	cmd.Flags().DurationVar(&wait, "wait", 0, "wait up to this long for a request to list (a task about to reach its gate); exit 1 if none came")
	return cmd
}

func (a *app) approvals(ctx context.Context, p approvals.ListParams, wait time.Duration) error {
	svc, err := a.operator(ctx)
	if err != nil {
		return err
	}
	// --wait polls as agentctl wait does: a request is one row written by
	// another process's gate.
	deadline := time.Now().Add(wait)
	rs, err := svc.Approvals(ctx, p)
	for err == nil && len(rs) == 0 && wait > 0 {
		if !time.Now().Before(deadline) {
			return newError(fmt.Sprintf("no approval request came within %s", wait), agentledger.ErrConflict)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(waitPoll):
		}
		rs, err = svc.Approvals(ctx, p)
	}
	if err != nil {
		return err
	}
	none := "no approval request waits for a decision"
	if len(p.States) > 0 {
		none = "no approval requests"
	}
	if a.output == "id" {
		for _, r := range rs {
			fmt.Fprintln(a.stdout, r.ID)
		}
		return nil
	}
	if done, err := listed(a, rs, none); done {
		return err
	}
	now := time.Now()
	all := len(p.States) > 0
	header := []string{"ID", "TASK", "STEP", "CALL", "AGE", "APPROVERS", "EXPIRES"}
	if all {
		header = []string{"ID", "TASK", "STEP", "CALL", "AGE", "STATE", "DECISION"}
	}
	tab := newTable(a.stdout, header...)
	for _, r := range rs {
		row := []string{strconv.FormatInt(r.ID, 10), strconv.FormatInt(r.TaskID, 10), r.Step,
			truncate(approvals.Summary(r), 60), age(now.Sub(r.RequestedAt))}
		if all {
			row = append(row, r.State, truncate(decisionText(r), 60))
		} else {
			row = append(row, approvers(r), relative(r.ExpiresAt, now))
		}
		tab.row(row...)
	}
	if err := tab.flush(); err != nil {
		return err
	}
	if len(rs) == p.Limit {
		fmt.Fprintf(a.stderr, "more requests may follow: narrow with --task or raise --limit\n")
	}
	return nil
}

// age is how long a request has waited, for the list: "12m".
func age(d time.Duration) string { return short(max(d, 0)) }

// approvers says who may decide r besides an operator.
func approvers(r approvals.Request) string {
	if len(r.Approvers) == 0 {
		return "anyone"
	}
	return strings.Join(r.Approvers, ",")
}

// decisionText is a request's decision for people, "-" while pending.
func decisionText(r approvals.Request) string {
	if r.State == approvals.Pending {
		return "-"
	}
	return operator.Outcome(r)
}

func (a *app) approvalCmd() *cobra.Command {
	var tenant string
	cmd := &cobra.Command{
		Use:   "approval ID",
		Short: "Show an approval request: the call it would perform and its decision",
		Long: `Show approval request ID in full: its task and step, the tool and its
effect class, the call exactly as it would be performed (its arguments after
templates are resolved), the model's stated reason for an agent's call, who
may decide, when it times out and what a timeout means, and its state and
decision.

With --output json it prints the request.`,
		Example: `  agentctl approval 7
  agentctl approval 7 -o json`,
		Args:              oneApprovalID,
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE: a.action(func(ctx context.Context, args []string) error {
			id, err := parseApprovalID(args[0])
			if err != nil {
				return err
			}
			svc, err := a.operator(ctx)
			if err != nil {
				return err
			}
			r, err := svc.Approval(ctx, tenant, id)
			if err != nil {
				return err
			}
			if a.wantJSON() {
				return printJSON(a.stdout, r)
			}
			return printApproval(a.stdout, r, time.Now())
		}),
	}
	tenantFlag(cmd, &tenant, "only if the request's task belongs to this tenant")
	return cmd
}

// decideFlags are approve's and deny's.
type decideFlags struct {
	tenant, reason, as string
	yes                bool
}

func (a *app) approveCmd() *cobra.Command {
	var f decideFlags
	cmd := &cobra.Command{
		Use:   "approve ID [--reason TEXT] [--yes]",
		Short: "Approve an approval request: its task performs the call, once",
		Long: `Approve approval request ID: the task waiting on it wakes and performs the
call, once, through the ledger. It first shows the request — the call
exactly as it would be performed — and asks for confirmation on the
terminal; --yes skips the question, and is needed when standard input is
not a terminal (exit 2 without it).

The first decision wins: a request decided already (by someone else, in
Slack, the console or the API, or by its timeout) or withdrawn (its task was
cancelled) is a conflict (exit 1) that says what happened, and nothing
changes. The decision is recorded as yours (the OS user; --as names
another) via agentctl.

With --output json it prints the request as decided.`,
		Example: `  agentctl approve 7
  agentctl approve 7 --reason "refund checked with the customer" --yes`,
		Args:              oneApprovalID,
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE:              a.action(func(ctx context.Context, args []string) error { return a.decide(ctx, args[0], true, &f) }),
	}
	f.register(cmd, "why it is approved (recorded with the decision)")
	cmd.Flags().BoolVar(&f.yes, "yes", false, "do not ask for confirmation (needed when standard input is not a terminal)")
	return cmd
}

func (a *app) denyCmd() *cobra.Command {
	var f decideFlags
	cmd := &cobra.Command{
		Use:   "deny ID --reason TEXT [--yes]",
		Short: "Deny an approval request: its call is not performed",
		Long: `Deny approval request ID: the call is not performed. A steps task's step
fails for good (its saga's compensations run when declared); an agent is
told the call was denied, and why, and goes on. --reason is required: it is
what the task is told and what its journal keeps. It first shows the request.

The first decision wins: a request decided already or withdrawn is a
conflict (exit 1) that says what happened, and nothing changes. The decision
is recorded as yours (the OS user; --as names another) via agentctl.

With --output json it prints the request as decided.`,
		Example:           `  agentctl deny 7 --reason "the customer withdrew the claim"`,
		Args:              oneApprovalID,
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE:              a.action(func(ctx context.Context, args []string) error { return a.decide(ctx, args[0], false, &f) }),
	}
	f.register(cmd, "why it is denied (required: the task is told)")
	// A denial performs nothing, so it asks nothing; --yes is accepted so
	// that a script deciding either way passes the same flags.
	cmd.Flags().BoolVar(&f.yes, "yes", false, "accepted as approve's is; a denial never asks for confirmation")
	return cmd
}

func (f *decideFlags) register(cmd *cobra.Command, reason string) {
	tenantFlag(cmd, &f.tenant, "only if the request's task belongs to this tenant")
	cmd.Flags().StringVar(&f.reason, "reason", "", reason)
	cmd.Flags().StringVar(&f.as, "as", "", "who decides, as recorded (default the OS user)")
}

func (a *app) decide(ctx context.Context, arg string, approve bool, f *decideFlags) error {
	id, err := parseApprovalID(arg)
	if err != nil {
		return err
	}
	if !approve && strings.TrimSpace(f.reason) == "" {
		return usagef("deny needs --reason TEXT: the task is told why its call was denied")
	}
	if f.as != "" && strings.TrimSpace(f.as) == "" {
		return usagef("--as names who decides, not blanks")
	}
	svc, err := a.operator(ctx)
	if err != nil {
		return err
	}
	r, err := svc.Approval(ctx, f.tenant, id)
	if err != nil {
		return err
	}
	if r.State != approvals.Pending {
		// Said in one line, who decided it and how: no preview of a call
		// nobody is asked about any more.
		return &operator.DecidedError{Request: r}
	}
	// The preview is for people; with JSON it goes to stderr.
	info := a.stdout
	if a.wantJSON() {
		info = a.stderr
	}
	if err := printApproval(info, r, time.Now()); err != nil {
		return err
	}
	if approve && !f.yes {
		err := a.confirm(fmt.Sprintf("Approve request %d: %s?", id, approvals.Summary(r)), "approve", "approved")
		switch {
		case errors.Is(err, errUsage): // no terminal to ask on
			return err
		case err != nil:
			return newError(fmt.Sprintf("not confirmed: approval request %d still waits for a decision", id), nil)
		}
	}
	r, err = svc.Decide(ctx, approvals.Decision{ID: id, Tenant: f.tenant, Approve: approve,
		By: cmp.Or(strings.TrimSpace(f.as), operator.Decider()), Via: operator.ViaAgentctl, Reason: f.reason})
	if err != nil {
		return err
	}
	if a.wantJSON() {
		return printJSON(a.stdout, r)
	}
	then := "wakes and performs the call, once"
	if !approve {
		then = deniedThen(r.Step)
	}
	_, err = fmt.Fprintf(a.stdout, "approval request %d %s by %s\ntask %d %s\n", id, r.State, r.DecidedBy, r.TaskID, then)
	return err
}

// deniedThen says what a denial does to the task, by the place of its call:
// an agent's tool call (tool/N/<call id>) is answered with the reason and
// the agent goes on; a steps task's step (tool/N) fails the task for good;
// a Go kind's call (call/…) fails with the reason, for the kind to decide.
func deniedThen(step string) string {
	switch {
	case steps.IsStepPath(step):
		return "fails for good, the call not performed (its compensations run, where its steps declared them)"
	case strings.HasPrefix(step, "tool/"):
		return "wakes and its agent is told why: the call is not performed"
	}
	return "wakes and its call fails with the reason: the call is not performed"
}

// printApproval writes request r for people: what it asks, who may
// decide, and its decision.
func printApproval(w io.Writer, r approvals.Request, now time.Time) error {
	at := func(ts time.Time) string { return stamp(ts) + " (" + relative(ts, now) + ")" }
	fields := newTable(w)
	fields.row("Approval:", strconv.FormatInt(r.ID, 10))
	fields.row("Task:", fmt.Sprintf("%d (generation %d, tenant %s)", r.TaskID, r.Generation, r.Tenant))
	fields.row("Step:", r.Step)
	fields.row("Call:", approvals.Summary(r))
	tool := r.Tool + " (" + r.Class + ")"
	if r.Target != "" {
		tool += " at " + r.Target
	}
	fields.row("Tool:", tool)
	fields.row("Asked because:", orDash(r.Reason)) // an agent's stated reason
	fields.row("Approvers:", approvers(r)+" (and operators)")
	fields.row("Asked:", at(r.RequestedAt))
	timeout := "a timeout denies"
	if r.OnTimeout == "approve" {
		timeout = "a timeout approves"
	}
	fields.row("Expires:", at(r.ExpiresAt)+"; "+timeout)
	fields.row("State:", r.State)
	if r.State != approvals.Pending {
		fields.row("Decision:", operator.Outcome(r))
	}
	if err := fields.flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "Arguments (as the call would be performed):\n%s\n", pretty(r.Call, "  "))
	return err
}

// parseApprovalID parses an approval request id argument.
func parseApprovalID(s string) (int64, error) {
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil || id <= 0 {
		return 0, usagef("approval request id must be a positive integer, not %q", s)
	}
	return id, nil
}

// oneApprovalID accepts exactly one argument, an approval request id.
func oneApprovalID(cmd *cobra.Command, args []string) error {
	if len(args) != 1 {
		return usagef("%s takes one approval request ID, got %d arguments", commandName(cmd), len(args))
	}
	return nil
}
