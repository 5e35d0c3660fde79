package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/admit"
	"github.com/agentledger/agentledger/waits"
)

// OpSendSignal sends a signal: method and route pattern, as OpCreateTask.
const OpSendSignal = "POST /v1/signals"

// Signal is a signal as the API shows it: sent to wake the oldest of the
// tenant's tasks waiting for its name and key (wait_for_signal), or kept
// for one until it expires. Fields without a value are null.
type Signal struct {
	ID      int64           `json:"id"`
	Tenant  string          `json:"tenant"`
	Name    string          `json:"name"`
	Key     string          `json:"key"`
	Payload json.RawMessage `json:"payload"`
	// SentBy says who sent it: "tenant:<tenant>, token <name> (<id>)",
	// "operator:<user>", "webhook:<source>".
	SentBy    string    `json:"sent_by"`
	SentAt    time.Time `json:"sent_at"`
	ExpiresAt time.Time `json:"expires_at"`
	// State is pending (no wait took it yet), consumed or expired.
	State      string     `json:"state"`
	ConsumedAt *time.Time `json:"consumed_at"`
	// WaitID and TaskID are the wait that consumed it and its task.
	WaitID *int64 `json:"wait_id"`
	TaskID *int64 `json:"task_id"`
}

// SignalList is GET /v1/signals's answer, newest first.
type SignalList struct {
	Signals []Signal `json:"signals"`
}

// SendSignalRequest is the body of POST /v1/signals. The bearer token
// names the tenant: Tenant may repeat it, and any other is refused (422).
// Payload (any JSON, default {}) becomes the waiting step's result.
// Retention is how long a signal no task waits for yet is kept for one to
// come: a duration from 1s to 2160h (90 days), default 168h.
type SendSignalRequest struct {
	Tenant    string          `json:"tenant,omitempty"`
	Name      string          `json:"name"`
	Key       string          `json:"key"`
	Payload   json.RawMessage `json:"payload,omitempty"`
	Retention string          `json:"retention,omitempty"`
}

func viewSignal(s waits.Signal) Signal {
	return Signal{ID: s.ID, Tenant: s.Tenant, Name: s.Name, Key: s.Key, Payload: s.Payload, SentBy: s.SentBy,
		SentAt: s.SentAt, ExpiresAt: s.ExpiresAt, State: s.State, ConsumedAt: s.ConsumedAt, WaitID: s.WaitID, TaskID: s.TaskID}
}

// sendSignal is POST /v1/signals: 201 Created with the signal — consumed,
// with the task it woke, when a task waited for it; pending otherwise.
// The signal's dedupe key is the key record's submission key, so a
// request that crashed after sending is answered, when retried, with the
// signal it sent (201, as it would have been). Without an Idempotency-Key
// (Config.IdempotencyKeyOptional) the same name, key and payload sent
// again is the same signal: 200 with it.
func (s *Server) sendSignal(r *http.Request, tenant string, body []byte) (action, error) {
	var req SendSignalRequest
	if err := decodeBody(body, &req); err != nil {
		return nil, err
	}
	p := waits.SignalParams{Tenant: req.Tenant, Name: req.Name, Key: req.Key, Payload: req.Payload}
	if req.Retention != "" {
		d, err := time.ParseDuration(req.Retention)
		if err != nil {
			return nil, agentledger.Invalid("retention", "%q is not a duration, like 48h", req.Retention)
		}
		if d == 0 { // zero would mean the default
			return nil, agentledger.Invalid("retention", "%s must be from 1s to %s", agentledger.DurationText(d), agentledger.DurationText(waits.MaxRetention))
		}
		p.Retention = d
	}
	by, err := s.decider(r, tenant)
	if err != nil {
		return nil, err
	}
	p, err = s.cfg.Door.AdmitSignal(admit.SignalSubmission{Caller: admit.Tenant, Params: p, By: by, Own: tenant})
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, submissionKey string) reply {
		p.DedupeKey = submissionKey
		sent, err := s.cfg.Waits.Send(ctx, p)
		if err != nil {
			return s.refusedReply(r, err)
		}
		status := http.StatusCreated
		if sent.Duplicate && submissionKey == "" {
			status = http.StatusOK
		}
		return jsonReply(status, viewSignal(sent.Signal))
	}, nil
}

// signalStates are a signal's states, as GET /v1/signals filters them.
var signalStates = []string{"pending", "consumed", "expired"}

// signalParams are the query parameters GET /v1/signals takes.
var signalParams = []string{"state", "name", "limit"}

// listSignals is GET /v1/signals?state=&name=&limit=: the tenant's
// signals, newest first; the pending ones (no wait took them yet) by
// default. state takes several states, comma-separated or repeated.
func (s *Server) listSignals(r *http.Request, tenant string) reply {
	q, err := parseQuery(r.URL.RawQuery)
	if err != nil {
		return s.problemReply(r, err)
	}
	if err := checkQuery(q, signalParams); err != nil {
		return s.problemReply(r, err)
	}
	p := waits.ListSignalsParams{Tenant: tenant, Name: q.Get("name")}
	if p.States, err = states(q, func(st string) bool { return slices.Contains(signalStates, st) }, signalStates); err != nil {
		return s.problemReply(r, err)
	}
	if p.Limit, err = limit(q, defaultListLimit); err != nil {
		return s.problemReply(r, err)
	}
	ss, err := s.cfg.Waits.ListSignals(r.Context(), p)
	if err != nil {
		return s.problemReply(r, err)
	}
	out := SignalList{Signals: make([]Signal, len(ss))}
	for i, sg := range ss {
		out.Signals[i] = viewSignal(sg)
	}
	return jsonReply(http.StatusOK, out)
}
