package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/approvals"
	"github.com/agentledger/agentledger/grants"
	"github.com/agentledger/agentledger/operator"
	"github.com/agentledger/agentledger/problem"
	"github.com/agentledger/agentledger/tenants"
)

// Approval is an approval request as the API shows it: an effect of one of
// the tenant's tasks waiting for a person's decision. Fields without a
// value are null.
type Approval struct {
	ID         int64  `json:"id"`
	TaskID     int64  `json:"task_id"`
	Generation int32  `json:"generation"`
	Step       string `json:"step"`
	Tenant     string `json:"tenant"`
	Tool       string `json:"tool"`
	Class      string `json:"class"`
	// Target is the effect's target (an HTTP origin) when it has one.
	Target *string `json:"target"`
	// Call is the call exactly as it would be performed: its arguments
	// after templates are resolved.
	Call json.RawMessage `json:"call"`
	// Reason is the model's stated reason, for an agent's call.
	Reason *string `json:"reason"`
	// Approvers are the Slack users and groups who may decide from Slack
	// (empty: anyone there).
	Approvers []string `json:"approvers"`
	// OnTimeout is what the request's expiry decides: deny or approve.
	OnTimeout   string    `json:"on_timeout"`
	RequestedAt time.Time `json:"requested_at"`
	ExpiresAt   time.Time `json:"expires_at"`
	// State is pending, approved, denied, expired (timed out, denying) or
	// withdrawn (its task was cancelled).
	State          string     `json:"state"`
	DecidedAt      *time.Time `json:"decided_at"`
	DecidedBy      *string    `json:"decided_by"`
	DecidedVia     *string    `json:"decided_via"`
	DecisionReason *string    `json:"decision_reason"`
}

// ApprovalList is GET /v1/approvals's answer.
type ApprovalList struct {
	Approvals []Approval `json:"approvals"`
}

// DecideRequest is the body of POST /v1/approvals/{id}/approve and /deny;
// a denial needs its reason (the task is told it).
type DecideRequest struct {
	Reason string `json:"reason,omitempty"`
}

// The decisions: method and route pattern, as OpCancelTask.
const (
	OpApprove = "POST /v1/approvals/{id}/approve"
	OpDeny    = "POST /v1/approvals/{id}/deny"
)

func nullString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func viewApproval(r approvals.Request) Approval {
	approvers := r.Approvers
	if approvers == nil {
		approvers = []string{}
	}
	return Approval{ID: r.ID, TaskID: r.TaskID, Generation: r.Generation, Step: r.Step, Tenant: r.Tenant, Tool: r.Tool,
		Class: r.Class, Target: nullString(r.Target), Call: r.Call, Reason: nullString(r.Reason), Approvers: approvers,
		OnTimeout: r.OnTimeout, RequestedAt: r.RequestedAt, ExpiresAt: r.ExpiresAt, State: r.State, DecidedAt: r.DecidedAt,
		DecidedBy: nullString(r.DecidedBy), DecidedVia: nullString(r.DecidedVia), DecisionReason: nullString(r.DecisionReason)}
}

// approvalID reads the {id} of the route; an id that cannot exist is not
// found.
func approvalID(r *http.Request) (int64, error) { return pathID(r, "approval request") }

// approvalParams are the query parameters GET /v1/approvals takes.
var approvalParams = []string{"state", "task", "limit"}

// listApprovals is GET /v1/approvals?state=&task=&limit=: the requests of
// the tenant's tasks, pending ones by default (the longest waiting first).
// state takes several states, comma-separated or repeated.
func (s *Server) listApprovals(r *http.Request, tenant string) reply {
	p, err := parseApprovalList(r.URL.RawQuery)
	if err != nil {
		return s.problemReply(r, err)
	}
	p.Tenant = tenant
	rs, err := s.cfg.Operator.Approvals(r.Context(), p)
	if err != nil {
		return s.problemReply(r, err)
	}
	out := ApprovalList{Approvals: make([]Approval, len(rs))}
	for i, a := range rs {
		out.Approvals[i] = viewApproval(a)
	}
	return jsonReply(http.StatusOK, out)
}

// parseApprovalList checks GET /v1/approvals's query. Every error matches
// errBadParameter (400).
func parseApprovalList(raw string) (approvals.ListParams, error) {
	p := approvals.ListParams{Limit: defaultListLimit}
	q, err := parseQuery(raw)
	if err != nil {
		return p, err
	}
	if err := checkQuery(q, approvalParams); err != nil {
		return p, err
	}
	if p.States, err = states(q, func(st string) bool { return slices.Contains(operator.ApprovalStates, st) }, operator.ApprovalStates); err != nil {
		return p, err
	}
	if p.TaskID, err = taskParam(q); err != nil {
		return p, err
	}
	p.Limit, err = limit(q, defaultListLimit)
	return p, err
}

// getApproval is GET /v1/approvals/{id}. Another tenant's request is not
// found.
func (s *Server) getApproval(r *http.Request, tenant string) reply {
	id, err := approvalID(r)
	if err != nil {
		return s.problemReply(r, err)
	}
	a, err := s.cfg.Operator.Approval(r.Context(), tenant, id)
	if err != nil {
		return s.problemReply(r, err)
	}
	return jsonReply(http.StatusOK, viewApproval(a))
}

func (s *Server) approve(r *http.Request, tenant string, body []byte) (action, error) {
	return s.decide(r, tenant, body, true)
}

func (s *Server) deny(r *http.Request, tenant string, body []byte) (action, error) {
	return s.decide(r, tenant, body, false)
}

// decide is POST /v1/approvals/{id}/approve and /deny: 200 with the request
// as decided; 409 with it as it stands (its "approval" member) when it was
// decided before — by someone else, by its timeout — or withdrawn; 403
// when the tenant's grant does not let it decide; 404 for another
// tenant's request. The decision is recorded via "api", by the token.
func (s *Server) decide(r *http.Request, tenant string, body []byte, approve bool) (action, error) {
	id, err := approvalID(r)
	if err != nil {
		return nil, err
	}
	var req DecideRequest
	if len(strings.TrimSpace(string(body))) > 0 {
		if err := decodeBody(body, &req); err != nil {
			return nil, err
		}
	}
	if !approve && strings.TrimSpace(req.Reason) == "" {
		return nil, agentledger.Invalid("reason", "a denial says why: the task is told so")
	}
	if err := s.mayDecide(r.Context(), tenant); err != nil {
		return nil, err
	}
	by, err := s.decider(r, tenant)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, _ string) reply {
		a, err := s.cfg.Operator.Decide(ctx, approvals.Decision{ID: id, Tenant: tenant, Approve: approve,
			By: "tenant:" + by, Via: operator.ViaAPI, Reason: req.Reason})
		var late *operator.DecidedError
		switch {
		case errors.As(err, &late):
			return s.decidedAlready(r, late)
		case err != nil:
			return s.problemReply(r, err)
		}
		return jsonReply(http.StatusOK, viewApproval(a))
	}, nil
}

// decidedAlready is the 409 of a decision that came too late: the problem,
// and the request as it stands.
func (s *Server) decidedAlready(r *http.Request, late *operator.DecidedError) reply {
	rp := s.problemReply(r, late)
	body, err := json.Marshal(struct {
		Problem
		Approval Approval `json:"approval"`
	}{problem.Of(late), viewApproval(late.Request)})
	if err != nil { // only our own types are encoded
		panic("httpapi: encoding a reply: " + err.Error())
	}
	rp.body = append(body, '\n')
	return rp
}

// mayDecide refuses (403, naming agentctl tenant grant --decide) a tenant
// whose grant does not let it decide. Without a grant source (Door.Grants)
// a tenant has the default grant, which does not.
func (s *Server) mayDecide(ctx context.Context, tenant string) error {
	g := grants.Default(tenant)
	if src := s.cfg.Door.Grants; src != nil {
		var err error
		if g, err = src.For(ctx, tenant); err != nil {
			return err
		}
	}
	return g.AllowDecide(tenant)
}

// decider is who acts through the API: the request's tenant and token, by
// name and id ("acme, token ci-deploy (7)"), which a decision, a cancel,
// a compensation and an ended wait record as "tenant:acme, token
// ci-deploy (7)" and a
// signal's sent_by as well, apart from an operator of the same name. The token was authenticated
// already; its clear prefix (never the token) finds it.
func (s *Server) decider(r *http.Request, tenant string) (string, error) {
	_, token, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	token = strings.TrimSpace(token)
	if len(token) < tenants.PrefixLen {
		return "", fmt.Errorf("the decision's token: %w", tenants.ErrUnauthorized)
	}
	prefix := token[:tenants.PrefixLen]
	ts, err := s.cfg.Tenants.ListTokens(r.Context(), tenant)
	if err != nil {
		return "", err
	}
	for _, t := range ts {
		if t.Prefix == prefix && t.RevokedAt == nil {
			return fmt.Sprintf("%s, token %s (%d)", tenant, t.Name, t.ID), nil
		}
	}
	return tenant + ", token " + prefix, nil // revoked since it was checked: its prefix still names it
}

// taskParam is the list filter ?task=ID: 0 when absent.
func taskParam(q url.Values) (int64, error) {
	v := q.Get("task")
	if v == "" {
		return 0, nil
	}
	id, err := strconv.ParseInt(v, 10, 64)
	if err != nil || id < 1 {
		return 0, badParameter("task", "must be a task id, a positive integer")
	}
	return id, nil
}
