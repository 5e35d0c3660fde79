package approvals

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/tools"
)

// TargetKind is the deferral target of a task waiting for a decision, as
// metrics count deferrals by target kind.
const TargetKind = "approval"

// Gate asks before a gated effect is performed: an Interceptor on the
// effect path. An effect is gated by its call's Approval (a step's, an
// agent tool's) or, when it declares none, by Policy.
type Gate struct {
	Store *Store
	// Policy gives the gate of an effect whose call declares none (the
	// daemon's "every unsafe effect needs approval", a tool declared as
	// needing one); nil, or a nil answer, lets it through.
	Policy func(o *tools.Outgoing) *tools.Approval
	// Requested, when set, is told of a request each time the gate finds
	// it pending (its first attempt, and each one after a wake-up or its
	// expiry) — asked is true the first time: to post it to Slack, to
	// count it. It must be idempotent by the request's id (an outbox
	// event keyed by it): a crash right after the request was recorded
	// leaves the telling to the next attempt. An error stops the attempt,
	// which is tried again.
	Requested func(ctx context.Context, r Request, asked bool) error
	// Decided, when set, is told of a decided request once, by the gate
	// that follows its decision first (the attempt after it), not at each
	// replay or retry that reaches it again: for metrics.
	Decided func(ctx context.Context, r Request)
	// Performed, when set, is told what an approved effect did once its
	// outcome is final (a result, or an error no attempt will retry) —
	// and again by every later attempt or replay that the ledger serves,
	// so a crash right after the effect loses no telling: it must be
	// idempotent by the request (an outbox event keyed by it), as
	// Requested is. An error stops the attempt, which is tried again.
	Performed func(ctx context.Context, r Request, res ledger.Result, err error) error
}

// Intercept is the gate: an effect with no gate, or one the ledger holds
// already (a replay, a later attempt after it ran), goes on; otherwise
// its request is recorded (once) and its decision followed — approved, it
// goes on to the ledger; denied or timed out, it is not performed (a
// permanent *tools.NotApprovedError); pending, the task is deferred until
// the request's expiry, and a decision wakes it before.
func (g *Gate) Intercept(ctx context.Context, o *tools.Outgoing, next tools.Next) (ledger.Result, error) {
	a := o.Approval
	if a == nil && g.Policy != nil {
		a = g.Policy(o)
	}
	if a == nil {
		return next(ctx, o)
	}
	if recorded, err := o.Recorded(ctx); err != nil || recorded {
		if err != nil {
			return ledger.Result{}, err
		}
		return g.served(ctx, o, next)
	}
	timeout := a.Timeout
	if timeout <= 0 {
		timeout = tools.DefaultApprovalTimeout
	}
	r, asked, err := g.Store.Ensure(ctx, requestOf(o, a), timeout)
	if err != nil {
		return ledger.Result{}, err
	}
	if r.State == Pending && !time.Now().Before(r.ExpiresAt) {
		if r, err = g.Store.Expire(ctx, r.ID); err != nil {
			return ledger.Result{}, err
		}
	}
	if r.State != Pending {
		// The decision joins the task's trace, on the tool call's span.
		trace.SpanFromContext(ctx).AddEvent("agentledger.approval", trace.WithAttributes(
			attribute.Int64("agentledger.approval.id", r.ID), attribute.String("agentledger.approval.state", r.State),
			attribute.String("agentledger.approval.by", r.DecidedBy), attribute.String("agentledger.approval.via", r.DecidedVia)))
		if g.Decided != nil {
			// Told once; a failed mark only leaves the metric unobserved,
			// never the attempt failed.
			if first, err := g.Store.Followed(ctx, r.ID); err == nil && first {
				g.Decided(ctx, r)
			}
		}
	}
	switch r.State {
	case Approved:
		return g.perform(ctx, r, o, next)
	case Pending:
		if g.Requested != nil {
			if err := g.Requested(ctx, r, asked); err != nil {
				return ledger.Result{}, fmt.Errorf("telling approval request %d: %w", r.ID, err)
			}
		}
		// Parked: waiting, out of the claims' way, until a decision wakes
		// it or the request's expiry comes.
		return ledger.Result{}, &agentledger.DeferredError{Until: r.ExpiresAt, Target: TargetKind + ":" + o.Name(),
			Reason: Waiting(r), Park: true}
	case Withdrawn:
		return ledger.Result{}, agentledger.Permanent(fmt.Errorf("approval request %d was withdrawn: %s", r.ID, r.DecisionReason))
	}
	return ledger.Result{}, agentledger.Permanent(&tools.NotApprovedError{Request: r.ID, Outcome: r.State,
		By: r.DecidedBy, Via: r.DecidedVia, Reason: r.DecisionReason})
}

// perform sends o on, approved by r, and tells Performed its outcome
// when it is final.
func (g *Gate) perform(ctx context.Context, r Request, o *tools.Outgoing, next tools.Next) (ledger.Result, error) {
	res, err := next(ctx, o)
	if g.Performed == nil || !final(err) {
		return res, err
	}
	if perr := g.Performed(ctx, r, res, err); perr != nil {
		return ledger.Result{}, fmt.Errorf("telling the outcome of approval request %d: %w", r.ID, perr)
	}
	return res, err
}

// served sends on an effect the ledger holds already; when it was
// approved, Performed is told again (the attempt that performed it may
// have died before telling).
func (g *Gate) served(ctx context.Context, o *tools.Outgoing, next tools.Next) (ledger.Result, error) {
	if g.Performed == nil {
		return next(ctx, o)
	}
	r, found, err := g.Store.Find(ctx, o.Task.ID, o.Task.Generation, o.StepPath)
	if err != nil {
		return ledger.Result{}, err
	}
	if !found || r.State != Approved {
		return next(ctx, o)
	}
	return g.perform(ctx, r, o, next)
}

// final reports whether err ends an effect's story: no error, or one no
// attempt will retry (a permanent failure, an outcome a person must
// resolve). A transient error or a deferral is retried.
func final(err error) bool {
	var p *agentledger.PermanentError
	var d *agentledger.DeferredError
	return err == nil || (!errors.As(err, &d) && (errors.As(err, &p) || errors.Is(err, agentledger.ErrNeedsAttention)))
}

// Waiting says what a task waiting for request r waits for: "waiting for
// approval 7 of http_request POST https://pay.example/refunds (approvers
// U123, S456), asked 12:04:31 UTC".
func Waiting(r Request) string {
	who := "any approver"
	if len(r.Approvers) > 0 {
		who = "approvers " + strings.Join(r.Approvers, ", ")
	}
	return fmt.Sprintf("waiting for approval %d of %s (%s), asked %s", r.ID, Summary(r), who,
		r.RequestedAt.UTC().Format("2006-01-02 15:04:05 UTC"))
}

// Summary is the call a request asks about, in a line: the tool, and for
// an HTTP call its method and URL.
func Summary(r Request) string {
	var http struct {
		Method string `json:"method"`
		URL    string `json:"url"`
	}
	if json.Unmarshal(r.Call, &http) == nil && http.Method != "" && http.URL != "" {
		return fmt.Sprintf("%s %s %s", r.Tool, strings.ToUpper(http.Method), http.URL)
	}
	return fmt.Sprintf("%s at %s", r.Tool, r.Step)
}

// requestOf is the request for o under gate a: the call exactly as it
// would be performed (its arguments after templates are resolved).
func requestOf(o *tools.Outgoing, a *tools.Approval) Request {
	args := o.Args
	if len(args) == 0 {
		args = o.Effect.Request
	}
	if len(args) == 0 || !json.Valid(args) {
		args = json.RawMessage(`{}`)
	}
	onTimeout := a.OnTimeout
	if onTimeout == "" {
		onTimeout = "deny"
	}
	return Request{TaskID: o.Task.ID, Generation: o.Task.Generation, Step: o.StepPath, Tenant: o.Task.Tenant,
		Tool: o.Name(), Class: string(o.Effect.Class), Target: o.Effect.Target, Call: args, Reason: o.Reason,
		Approvers: a.Approvers, OnTimeout: onTimeout, Channel: a.Channel}
}
