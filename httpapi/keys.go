package httpapi

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentledger/agentledger"
)

// keyRequest is one request under an Idempotency-Key.
type keyRequest struct {
	tenant, operation, key string
	fingerprint            []byte
}

// heldKey is a key record this request holds in flight until lockedUntil.
type heldKey struct {
	keyRequest
	lockedUntil time.Time // the fencing token
	createdAt   time.Time
	takeover    bool // the record was left in flight by an earlier request
}

// submissionKey is the claims submission key of the task POST /v1/tasks
// creates under this record: the key and the record's creation time.
//
// The key alone would make the task exactly-once for as long as the task
// exists, outliving the record: a client reusing a key after its record
// was reaped (the retention window is the promise) would get the old task
// back. The record's creation time tells records apart, and survives a
// takeover: the retry of a request that crashed after its enqueue
// committed, but before its answer was stored, finds that task (claims
// reports a duplicate) instead of making a second one. A key too long to
// fit is hashed.
func (h *heldKey) submissionKey() string {
	micros := h.createdAt.UnixMicro()
	if k := fmt.Sprintf("api:%d:%s", micros, h.key); len(k) <= maxKeyLen {
		return k
	}
	return fmt.Sprintf("api-sha256:%d:%x", micros, sha256.Sum256([]byte(h.key)))
}

// keyStore keeps the Idempotency-Key records.
type keyStore struct {
	db    DB
	lease time.Duration
}

// acquireTries bounds acquire's loop: each turn follows a record that
// changed under it (completed, taken over or deleted meanwhile).
const acquireTries = 5

// acquire decides what a request under a key does: it holds the key and
// runs (held), or it answers with the stored reply of an earlier request
// (stored), or it is refused: errKeyReused for a different fingerprint,
// errKeyInFlight (with a retry delay) while another request holds it.
func (ks *keyStore) acquire(ctx context.Context, req keyRequest) (held *heldKey, stored *reply, err error) {
	args := []any{req.tenant, req.operation, req.key, req.fingerprint, ks.lease}
	for range acquireTries {
		h := &heldKey{keyRequest: req}
		err := ks.db.QueryRow(ctx, reserveKeySQL, args...).Scan(&h.lockedUntil, &h.createdAt)
		if err == nil {
			return h, nil, nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return nil, nil, fmt.Errorf("idempotency key: %w", err)
		}

		var fp []byte
		var state string
		var locked bool
		var status *int32
		var header http.Header
		var body []byte
		err = ks.db.QueryRow(ctx, getKeySQL, req.tenant, req.operation, req.key).
			Scan(&fp, &state, &locked, &status, &header, &body)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			continue // deleted since: reserve again
		case err != nil:
			return nil, nil, fmt.Errorf("idempotency key: %w", err)
		case !bytes.Equal(fp, req.fingerprint):
			return nil, nil, fmt.Errorf("%w (another method, path or body); use a new key for a new request", errKeyReused)
		case state == "completed" && status != nil:
			if header == nil {
				header = http.Header{}
			}
			return nil, &reply{status: int(*status), header: header, body: body}, nil
		case locked:
			return nil, nil, agentledger.RetryAfter(errKeyInFlight, time.Second)
		}

		h.takeover = true
		err = ks.db.QueryRow(ctx, takeOverKeySQL, args...).Scan(&h.lockedUntil, &h.createdAt)
		if err == nil {
			return h, nil, nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return nil, nil, fmt.Errorf("idempotency key: %w", err)
		}
		// Another request took it over, or it completed: look again.
	}
	return nil, nil, agentledger.RetryAfter(errKeyInFlight, time.Second)
}

// complete stores rp as the key's answer. It reports false when the key is
// no longer this request's (its lock ran out and another request took it
// over, or it was deleted): nothing is stored then.
func (ks *keyStore) complete(ctx context.Context, h *heldKey, rp reply) (bool, error) {
	tag, err := ks.db.Exec(ctx, completeKeySQL, h.tenant, h.operation, h.key, h.lockedUntil,
		rp.status, rp.header, rp.body)
	if err != nil {
		return false, fmt.Errorf("idempotency key: storing the answer: %w", err)
	}
	return tag.RowsAffected() == 1, nil
}

// forget deletes the record of a request refused inside its action
// (reply.refused), which stored nothing: the key is free for another body.
func (ks *keyStore) forget(ctx context.Context, h *heldKey) (bool, error) {
	tag, err := ks.db.Exec(ctx, forgetKeySQL, h.tenant, h.operation, h.key, h.lockedUntil)
	if err != nil {
		return false, fmt.Errorf("idempotency key: forgetting: %w", err)
	}
	return tag.RowsAffected() == 1, nil
}

// release ends the request's lock on the key without an answer, so that the
// client's retry runs the request again at once.
func (ks *keyStore) release(ctx context.Context, h *heldKey) (bool, error) {
	tag, err := ks.db.Exec(ctx, releaseKeySQL, h.tenant, h.operation, h.key, h.lockedUntil)
	if err != nil {
		return false, fmt.Errorf("idempotency key: releasing: %w", err)
	}
	return tag.RowsAffected() == 1, nil
}
