package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/problem"
	"github.com/agentledger/agentledger/waits"
)

// OpEndWait ends a wait for the tenant: method and route pattern, as
// OpCancelTask.
const OpEndWait = "POST /v1/waits/{id}/end"

// Wait is what one of the tenant's tasks waits for at one step — a signal
// with a correlation key, a timer, its children — as the API shows it.
// Fields without a value are null.
type Wait struct {
	ID         int64  `json:"id"`
	TaskID     int64  `json:"task_id"`
	Generation int32  `json:"generation"`
	Step       string `json:"step"`
	Tenant     string `json:"tenant"`
	// Kind is signal, timer or children.
	Kind string `json:"kind"`
	// Signal and Key are what a signal wait waits for.
	Signal *string `json:"signal"`
	Key    *string `json:"key"`
	// Spec is a children wait's: its mode, on_failure and tasks.
	Spec      json.RawMessage `json:"spec"`
	CreatedAt time.Time       `json:"created_at"`
	// Deadline is when a timer fires, or when a wait times out.
	Deadline time.Time `json:"deadline"`
	// State is waiting, done, timed_out, ended (by an operator or the
	// tenant) or cancelled (its task was).
	State string `json:"state"`
	// Description says what it waits for, as the task's wait_reason
	// does; null once it ended.
	Description *string         `json:"description"`
	Result      json.RawMessage `json:"result"`
	SignalID    *int64          `json:"signal_id"`
	EndedAt     *time.Time      `json:"ended_at"`
	EndedBy     *string         `json:"ended_by"`
	EndReason   *string         `json:"end_reason"`
}

// WaitList is GET /v1/waits's answer.
type WaitList struct {
	Waits []Wait `json:"waits"`
}

// EndWaitRequest is the body of POST /v1/waits/{id}/end: the reason is
// required, as the waiting call fails with it.
type EndWaitRequest struct {
	Reason string `json:"reason"`
}

func viewWait(w waits.Wait) Wait {
	v := Wait{ID: w.ID, TaskID: w.TaskID, Generation: w.Generation, Step: w.Step, Tenant: w.Tenant, Kind: w.Kind,
		Signal: nullString(w.Signal), Key: nullString(w.Key), CreatedAt: w.CreatedAt, Deadline: w.Deadline, State: w.State,
		Result: w.Result, SignalID: w.SignalID, EndedAt: w.EndedAt,
		EndedBy: nullString(w.EndedBy), EndReason: nullString(w.EndReason)}
	if w.Kind == waits.KindChildren {
		v.Spec = w.Spec
	}
	if w.State == waits.Waiting {
		d := waits.Describe(w)
		v.Description = &d
	}
	return v
}

// waitID reads the {id} of the route; an id that cannot exist is not
// found.
func waitID(r *http.Request) (int64, error) { return pathID(r, "wait") }

// waitStates are a wait's states, as GET /v1/waits filters them.
var waitStates = []string{waits.Waiting, waits.Done, waits.TimedOut, waits.Ended, waits.Cancelled}

// waitKinds are the kinds of wait.
var waitKinds = []string{waits.KindSignal, waits.KindTimer, waits.KindChildren}

// waitParams are the query parameters GET /v1/waits takes.
var waitParams = []string{"state", "task", "kind", "limit"}

// listWaits is GET /v1/waits?state=&task=&kind=&limit=: the waits of the
// tenant's tasks; by default the waiting ones, the soonest deadline
// first (others newest first). state takes several states,
// comma-separated or repeated.
func (s *Server) listWaits(r *http.Request, tenant string) reply {
	p, err := parseWaitList(r.URL.RawQuery)
	if err != nil {
		return s.problemReply(r, err)
	}
	p.Tenant = tenant
	ws, err := s.cfg.Waits.List(r.Context(), p)
	if err != nil {
		return s.problemReply(r, err)
	}
	out := WaitList{Waits: make([]Wait, len(ws))}
	for i, w := range ws {
		out.Waits[i] = viewWait(w)
	}
	return jsonReply(http.StatusOK, out)
}

// parseWaitList checks GET /v1/waits's query. Every error matches
// errBadParameter (400).
func parseWaitList(raw string) (waits.ListParams, error) {
	p := waits.ListParams{}
	q, err := parseQuery(raw)
	if err != nil {
		return p, err
	}
	if err := checkQuery(q, waitParams); err != nil {
		return p, err
	}
	if p.States, err = states(q, func(st string) bool { return slices.Contains(waitStates, st) }, waitStates); err != nil {
		return p, err
	}
	if p.TaskID, err = taskParam(q); err != nil {
		return p, err
	}
	if p.Kind = q.Get("kind"); p.Kind != "" && !slices.Contains(waitKinds, p.Kind) {
		return p, badParameter("kind", "%q is not one of %v", p.Kind, waitKinds)
	}
	p.Limit, err = limit(q, defaultListLimit)
	return p, err
}

// getWait is GET /v1/waits/{id}. Another tenant's wait is not found.
func (s *Server) getWait(r *http.Request, tenant string) reply {
	id, err := waitID(r)
	if err != nil {
		return s.problemReply(r, err)
	}
	w, err := s.cfg.Waits.Get(r.Context(), tenant, id)
	if err != nil {
		return s.problemReply(r, err)
	}
	return jsonReply(http.StatusOK, viewWait(w))
}

// endWait is POST /v1/waits/{id}/end {"reason"}: 200 with the wait ended —
// its task wakes and the waiting call fails with the reason, as a timeout
// does; 409 with the wait as it stands (its "wait" member) when it had
// ended already; 404 for another tenant's. It is recorded as ended by the
// token ("tenant:acme, token ci-deploy (7)").
func (s *Server) endWait(r *http.Request, tenant string, body []byte) (action, error) {
	id, err := waitID(r)
	if err != nil {
		return nil, err
	}
	var req EndWaitRequest
	if len(strings.TrimSpace(string(body))) > 0 { // no body: the reason is missing (422), as a denial's
		if err := decodeBody(body, &req); err != nil {
			return nil, err
		}
	}
	if req.Reason = strings.TrimSpace(req.Reason); req.Reason == "" {
		return nil, agentledger.Invalid("reason", "ending a wait says why: the waiting call fails with it")
	}
	if len(req.Reason) > 2000 {
		return nil, agentledger.Invalid("reason", "is %d bytes; at most 2000", len(req.Reason))
	}
	by, err := s.decider(r, tenant)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, _ string) reply {
		w, ended, err := s.cfg.Waits.End(ctx, tenant, id, "tenant:"+by, req.Reason)
		switch {
		case err != nil:
			return s.problemReply(r, err)
		case !ended:
			return s.endedAlready(r, w)
		}
		return jsonReply(http.StatusOK, viewWait(w))
	}, nil
}

// endedAlready is the 409 of ending a wait that had ended: the problem,
// and the wait as it stands.
func (s *Server) endedAlready(r *http.Request, w waits.Wait) reply {
	err := agentledger.Errorf(agentledger.CodeConflict, "wait %d is %s already, since %s", w.ID, w.State, stampOf(w.EndedAt))
	rp := s.problemReply(r, err)
	body, merr := json.Marshal(struct {
		Problem
		Wait Wait `json:"wait"`
	}{problem.Of(err), viewWait(w)})
	if merr != nil { // only our own types are encoded
		panic("httpapi: encoding a reply: " + merr.Error())
	}
	rp.body = append(body, '\n')
	return rp
}

// stampOf is an end time for a message.
func stampOf(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}
