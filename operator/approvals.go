package operator

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"os/user"
	"slices"
	"strings"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/approvals"
)

// Where a decision comes from (approvals.Decision.Via), beside Slack's.
const (
	ViaAgentctl = "agentctl"
	ViaConsole  = "console"
	ViaAPI      = "api"
)

// Approvals lists approval requests (pending ones by default, the longest
// waiting first): approvals.Store.List.
func (s *Service) Approvals(ctx context.Context, p approvals.ListParams) ([]approvals.Request, error) {
	for _, st := range p.States {
		if !slices.Contains(ApprovalStates, st) {
			return nil, agentledger.Invalid("state", "%q is not a state of an approval request; one of %s",
				st, strings.Join(ApprovalStates, ", "))
		}
	}
	return approvals.NewStore(s.db).List(ctx, p)
}

// ApprovalStates are the states of an approval request, pending first.
var ApprovalStates = []string{approvals.Pending, approvals.Approved, approvals.Denied, approvals.Expired, approvals.Withdrawn}

// Approval returns approval request id; tenant, when set, must own its
// task (agentledger.ErrNotFound otherwise).
func (s *Service) Approval(ctx context.Context, tenant string, id int64) (approvals.Request, error) {
	return approvals.NewStore(s.db).Get(ctx, tenant, id)
}

// RefusedCalls are the approval requests of task t's generation that a
// person denied, or that timed out or were withdrawn unapproved: a replay
// or a retry of that generation meets the same refusal at their steps, and
// asks nobody; a re-run, a new intent, asks anew. None while t undoes its
// effects (a compensation asks for no approval).
func (s *Service) RefusedCalls(ctx context.Context, tenant string, t *agentledger.Task) ([]approvals.Request, error) {
	if t.Compensation != "" {
		return nil, nil
	}
	rs, err := approvals.NewStore(s.db).List(ctx, approvals.ListParams{Tenant: tenant, TaskID: t.ID,
		States: []string{approvals.Denied, approvals.Expired, approvals.Withdrawn}})
	if err != nil {
		return nil, err
	}
	out := rs[:0]
	for _, r := range rs {
		if r.Generation == t.Generation {
			out = append(out, r)
		}
	}
	return out, nil
}

// RefusedHow says how request r refused its call: "denied by alice",
// "timed out", "withdrawn when operator:root cancelled the task" (a cancel
// withdraws the requests of the task it ends; "withdrawn" when who did is
// not recorded).
func RefusedHow(r approvals.Request) string {
	switch {
	case r.State == approvals.Denied:
		return "denied by " + r.DecidedBy
	case r.State == approvals.Expired:
		return "timed out"
	case r.State == approvals.Withdrawn && r.DecidedVia == "cancel" && r.DecidedBy != "":
		return "withdrawn when " + r.DecidedBy + " cancelled the task"
	}
	return r.State
}

// DecidedError is a decision that came too late: the request was decided
// already (by someone else, by its timeout) or withdrawn. It matches
// agentledger.ErrConflict; Request is the request as it stands.
type DecidedError struct{ Request approvals.Request }

func (e *DecidedError) Error() string {
	return fmt.Sprintf("approval request %d was decided already: %s", e.Request.ID, Outcome(e.Request))
}

// Unwrap makes a late decision a conflict (exit 1, HTTP 409).
func (e *DecidedError) Unwrap() error { return agentledger.ErrConflict }

// Outcome says how a decided request was decided: "approved by alice via
// agentctl at 2026-12-05 12:04:31 UTC: refund checked".
func Outcome(r approvals.Request) string {
	if r.State == approvals.Pending {
		return "pending"
	}
	out := r.State
	if r.DecidedBy != "" && r.DecidedVia != "timeout" {
		out += " by " + r.DecidedBy
		if r.DecidedVia != "" {
			out += " via " + r.DecidedVia
		}
	}
	if r.DecidedAt != nil {
		out += " at " + r.DecidedAt.UTC().Format("2006-01-02 15:04:05 UTC")
	}
	if r.DecisionReason != "" {
		out += ": " + r.DecisionReason
	}
	return out
}

// Decide records d (approvals.Store.Decide): the first decision of a
// request wins. A later one changes nothing and is a *DecidedError
// holding the request as the winner left it. A denial needs its reason,
// which is what the task's journal and a denied agent are told.
func (s *Service) Decide(ctx context.Context, d approvals.Decision) (approvals.Request, error) {
	if d.Reason = strings.TrimSpace(d.Reason); !d.Approve && d.Reason == "" {
		return approvals.Request{}, agentledger.Invalid("reason", "a denial says why: the task is told so")
	}
	r, won, err := approvals.NewStore(s.db).Decide(ctx, d)
	if err != nil {
		return approvals.Request{}, err
	}
	if !won {
		return r, &DecidedError{Request: r}
	}
	return r, nil
}

// Actor is how an operator named name is recorded as who cancelled a task
// (its last error, its withdrawn requests, its ended waits) or ended a
// wait: "operator:alice", as the door records an operator's signal
// (admit's sender "operator"), beside the API's "tenant:acme,
// token ci-deploy (7)" and the system's "timeout" and "signal". An
// approval's decision records the bare name, with how it was made
// (decided_via) beside it.
func Actor(name string) string { return "operator:" + name }

// Decider is who decides at this terminal, for an operator's decision:
// the OS user, else $USER, else "operator".
func Decider() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	return cmp.Or(strings.TrimSpace(os.Getenv("USER")), "operator")
}
