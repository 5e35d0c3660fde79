package webhooks

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/admit"
)

// errVanished: the inbox row that turned a delivery away was deleted
// (retention) before its task could be read. Trying again accepts it.
var errVanished = errors.New("webhooks: inbox row deleted during the delivery")

// stored is what became of a delivery.
type stored struct {
	taskID    int64
	duplicate bool
	// sameBodyAs is the delivery id that first brought this body, when
	// this one came under another id (a captured delivery sent again).
	sameBodyAs string
}

// attempts bounds the transactions one delivery may take: more than one
// only after a serialization failure, a deadlock or errVanished.
const attempts = 3

// store records d in the inbox and enqueues its task, in one transaction.
func (h *Handler) store(ctx context.Context, s *Source, d *delivery, payload json.RawMessage) (stored, error) {
	var (
		res stored
		err error
	)
	for range attempts {
		res, err = h.storeOnce(ctx, s, d, payload)
		if !retryable(err) {
			break
		}
	}
	return res, err
}

func (h *Handler) storeOnce(ctx context.Context, s *Source, d *delivery, payload json.RawMessage) (stored, error) {
	var res stored
	err := pgx.BeginFunc(ctx, h.db, func(tx pgx.Tx) error {
		seen, err := recordDelivery(ctx, tx, s, d)
		if err != nil || seen != nil {
			if seen != nil {
				res.duplicate, res.sameBodyAs = true, seen.sameBodyAs
				if seen.task != nil {
					res.taskID = *seen.task
				}
			}
			return err
		}
		p := s.template()
		p.Payload = payload
		p.SubmissionKey = submissionKey(s.Name, d.id)
		r, err := h.door.Enqueue(ctx, tx, admit.Submission{Caller: admit.Webhook, Params: p})
		if err != nil {
			return err
		}
		// A task that outlived its inbox row (retention) comes back as a
		// duplicate of its submission key: still one task.
		res.taskID, res.duplicate = r.Task.ID, r.Duplicate
		if _, err := tx.Exec(ctx, setInboxTaskSQL, s.Name, d.id, r.Task.ID); err != nil {
			return fmt.Errorf("webhooks: inbox: %w", err)
		}
		return nil
	})
	return res, err
}

// submissionKey is the task's submission key: one task per (tenant,
// source, delivery id) even once the inbox row is gone.
func submissionKey(source, deliveryID string) string {
	return "hook:" + source + ":" + deliveryID
}

// retryable reports whether a new transaction may succeed where err failed.
func retryable(err error) bool {
	if errors.Is(err, errVanished) {
		return true
	}
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == "40001" || pe.Code == "40P01")
}

// unstorableJSON reports whether err refuses the payload's JSON as jsonb
// cannot hold it (a \u0000 in a string, a lone surrogate, a number beyond
// numeric's range): claims' check, or PostgreSQL's data exception (class
// 22; the payload is the one value not checked before).
func unstorableJSON(err error) bool {
	var pe *pgconn.PgError
	var ie *agentledger.InvalidError
	return errors.As(err, &pe) && strings.HasPrefix(pe.Code, "22") ||
		errors.As(err, &ie) && ie.Field == "payload" && (strings.Contains(ie.Problem, "jsonb") || strings.Contains(ie.Problem, "UTF-8"))
}

// seenDelivery is a delivery the inbox holds already: by its id, or by its
// body under another id.
type seenDelivery struct {
	firstID    string // the id that first brought it
	sameBodyAs string // firstID when it differs from this delivery's
	task       *int64 // the task it queued, if it queued one
}

// recordDelivery inserts d into the inbox in tx: nil for a new delivery;
// for one seen before, what the inbox holds of it; a known id with
// another body is agentledger.ErrKeyReuse.
func recordDelivery(ctx context.Context, tx pgx.Tx, s *Source, d *delivery) (*seenDelivery, error) {
	tag, err := tx.Exec(ctx, insertInboxSQL, s.Name, d.id, d.hash)
	if err != nil {
		return nil, fmt.Errorf("webhooks: inbox: %w", err)
	}
	if tag.RowsAffected() == 1 {
		return nil, nil
	}
	var seen seenDelivery
	var firstHash []byte
	switch err := tx.QueryRow(ctx, inboxTaskSQL, s.Name, d.id, d.hash).Scan(&seen.firstID, &firstHash, &seen.task); {
	case errors.Is(err, pgx.ErrNoRows):
		return nil, errVanished
	case err != nil:
		return nil, fmt.Errorf("webhooks: inbox: %w", err)
	}
	switch {
	case seen.firstID != d.id:
		seen.sameBodyAs = seen.firstID
	case firstHash != nil && !bytes.Equal(firstHash, d.hash) && !bytes.Equal(firstHash, d.bodyHash):
		return nil, fmt.Errorf("webhooks: delivery %q: %w", d.id, agentledger.ErrKeyReuse)
	}
	return &seen, nil
}
