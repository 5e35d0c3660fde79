package webhooks

import (
	"context"
	"errors"
	"log/slog"
	"net/http"

	"github.com/jackc/pgx/v5"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/admit"
	"github.com/agentledger/agentledger/waits"
)

// signalStored is what became of a signal source's delivery.
type signalStored struct {
	signal    waits.Signal
	duplicate bool
	// sameBodyAs is the delivery id that first brought this body, when
	// this one came under another id.
	sameBodyAs string
}

// signalAnswer is the answer to a signal source's delivery: the signal,
// and the task it woke when a task took it.
type signalAnswer struct {
	Duplicate bool   `json:"duplicate,omitempty"`
	SignalID  int64  `json:"signal_id"`
	State     string `json:"state"`
	TaskID    *int64 `json:"task_id,omitempty"`
}

// serveSignal makes the authenticated delivery d of signal source s a
// signal: 202 {"signal_id", "state", "task_id"?} when new, 200 with
// "duplicate": true when the delivery (its id, or its body) came before.
func (h *Handler) serveSignal(w http.ResponseWriter, r *http.Request, s *Source, d *delivery) {
	name, key, payload, err := s.Signal.signalOf(d.body)
	if err != nil {
		h.reject(w, r, s, d.id, newProblem(agentledger.CodeInvalid, "the body makes no %s signal: %v", s.Name, err))
		return
	}
	p := waits.SignalParams{Tenant: s.Tenant, Name: name, Key: key, Payload: payload,
		DedupeKey: submissionKey(s.Name, d.id), Retention: s.Signal.Retention}
	var res signalStored
	for range attempts {
		res, err = h.storeSignal(r.Context(), s, d, p)
		if !retryable(err) {
			break
		}
	}
	switch {
	case errors.Is(err, agentledger.ErrKeyReuse):
		h.reject(w, r, s, d.id, newProblem(agentledger.CodeDeliveryConflict,
			"delivery id %q already made a signal from a different delivery", d.id))
		return
	case unstorableJSON(err):
		h.reject(w, r, s, d.id, newProblem(agentledger.CodeInvalid, "the body holds JSON PostgreSQL cannot store (a \\u0000 or a lone surrogate such as \\ud800 in a string, or a number beyond its range)"))
		return
	case errors.Is(err, agentledger.ErrInvalid):
		h.reject(w, r, s, d.id, newProblem(agentledger.CodeInvalid, "the body makes no valid signal: %v", err))
		return
	case err != nil:
		h.fail(w, r, s, d.id, err)
		return
	}
	sig := res.signal
	attrs := []slog.Attr{slog.String("source", s.Name), slog.String("delivery_id", d.id), slog.String("event", d.event),
		slog.Int64("signal_id", sig.ID), slog.String("signal", sig.Name), slog.String("state", sig.State)}
	if sig.TaskID != nil {
		attrs = append(attrs, slog.Int64("task_id", *sig.TaskID))
	}
	answer := signalAnswer{SignalID: sig.ID, State: sig.State, TaskID: sig.TaskID}
	if res.duplicate {
		if res.sameBodyAs != "" {
			attrs = append(attrs, slog.String("same_body_as", res.sameBodyAs))
		}
		h.log.LogAttrs(r.Context(), slog.LevelInfo, "webhook duplicate", attrs...)
		h.report(s.Name, OutcomeDuplicate)
		answer.Duplicate = true
		writeJSON(w, http.StatusOK, "application/json", answer)
		return
	}
	h.log.LogAttrs(r.Context(), slog.LevelInfo, "webhook accepted", attrs...)
	h.report(s.Name, OutcomeAccepted)
	writeJSON(w, http.StatusAccepted, "application/json", answer)
}

// storeSignal records d in the inbox and, when it is new, sends its
// signal through the door, in one transaction: a delivery the door
// refuses leaves no inbox row, so its corrected redelivery is taken.
func (h *Handler) storeSignal(ctx context.Context, s *Source, d *delivery, p waits.SignalParams) (signalStored, error) {
	var res signalStored
	err := pgx.BeginFunc(ctx, h.db, func(tx pgx.Tx) error {
		seen, err := recordDelivery(ctx, tx, s, d)
		if err != nil {
			return err
		}
		if seen != nil {
			res.duplicate, res.sameBodyAs = true, seen.sameBodyAs
			res.signal, err = waits.NewStore(tx).SignalByKey(ctx, s.Tenant, submissionKey(s.Name, seen.firstID))
			return err
		}
		// A signal that outlived its inbox row (retention) comes back as a
		// duplicate of its dedupe key: still one signal.
		sent, err := h.door.Signal(ctx, tx, admit.SignalSubmission{Caller: admit.Webhook, Params: p, By: s.Name, Own: s.Tenant})
		if err != nil {
			return err
		}
		res.signal, res.duplicate = sent.Signal, sent.Duplicate
		return nil
	})
	return res, err
}
