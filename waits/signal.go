package waits

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/canonjson"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/dbaway"
	"github.com/agentledger/agentledger/internal/syncwait"
)

// Limits of a signal.
const (
	MaxNameLen = 128
	MaxKeyLen  = 255
	// MaxPayload bounds a signal's payload: it becomes a step's result.
	MaxPayload = 256 << 10
	// DefaultRetention is how long a signal nobody waits for yet is kept
	// for a wait to come.
	DefaultRetention = 7 * 24 * time.Hour
	// MaxRetention bounds a signal's retention.
	MaxRetention = 90 * 24 * time.Hour
)

// SignalParams is a signal to send.
type SignalParams struct {
	Tenant string
	// Name is what the waiters wait for ("payment.settled"); Key the
	// correlation key that picks the waiter ("order-1004").
	Name, Key string
	// Payload is the waiting step's result; empty is {}.
	Payload json.RawMessage
	// DedupeKey makes a resend the same signal (the API's
	// Idempotency-Key, a webhook delivery's id); empty derives it from
	// the name, key and payload, so the same signal sent twice is one.
	DedupeKey string
	// SentBy says who sent it: "tenant", "operator:alice",
	// "webhook:stripe".
	SentBy string
	// Retention is how long it is kept for a wait that has not come;
	// zero is DefaultRetention.
	Retention time.Duration
}

// Validate checks p's fields, each error naming its field
// (*agentledger.InvalidError); it fills the defaults.
func (p *SignalParams) Validate() error {
	if p.Tenant == "" {
		p.Tenant = "default"
	}
	if err := checkName("name", p.Name); err != nil {
		return err
	}
	if err := checkKey("key", p.Key); err != nil {
		return err
	}
	p.Payload = bytes.TrimSpace(p.Payload)
	if len(p.Payload) == 0 {
		p.Payload = json.RawMessage(`{}`)
	}
	if len(p.Payload) > MaxPayload {
		return agentledger.Invalid("payload", "is %d bytes; at most %d", len(p.Payload), MaxPayload)
	}
	if !json.Valid(p.Payload) {
		return agentledger.Invalid("payload", "is not JSON")
	}
	if p.DedupeKey != "" && !claims.ValidKey(p.DedupeKey) {
		return agentledger.Invalid("idempotency_key", "must be 1-255 printable ASCII characters")
	}
	if p.SentBy == "" {
		return agentledger.Invalid("sent_by", "a signal names who sends it")
	}
	switch {
	case p.Retention == 0:
		p.Retention = DefaultRetention
	case p.Retention < time.Second || p.Retention > MaxRetention:
		return agentledger.Invalid("retention", "%s must be from 1s to %s", agentledger.DurationText(p.Retention), agentledger.DurationText(MaxRetention))
	}
	return nil
}

// checkName checks a signal's name: the rule of kinds and queues, with /.
func checkName(field, s string) error {
	if s == "" {
		return agentledger.Invalid(field, "is empty: a signal has a name, like payment.settled")
	}
	if len(s) > MaxNameLen {
		return agentledger.Invalid(field, "is %d characters; at most %d", len(s), MaxNameLen)
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("._-:/", r)) {
			return agentledger.Invalid(field, "%q may hold letters, digits and . _ - : / only", s)
		}
	}
	return nil
}

// checkKey checks a correlation key: any printable text.
func checkKey(field, s string) error {
	if s == "" {
		return agentledger.Invalid(field, "is empty: a correlation key picks the waiter, like order-1004")
	}
	if len(s) > MaxKeyLen {
		return agentledger.Invalid(field, "is %d bytes; at most %d", len(s), MaxKeyLen)
	}
	if !utf8.ValidString(s) || strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return agentledger.Invalid(field, "must be printable text")
	}
	return nil
}

// Signal is a signal sent.
type Signal struct {
	ID         int64           `json:"id"`
	Tenant     string          `json:"tenant"`
	Name       string          `json:"name"`
	Key        string          `json:"key"`
	Payload    json.RawMessage `json:"payload"`
	DedupeKey  string          `json:"idempotency_key"`
	SentBy     string          `json:"sent_by"`
	SentAt     time.Time       `json:"sent_at"`
	ExpiresAt  time.Time       `json:"expires_at"`
	State      string          `json:"state"` // pending, consumed, expired
	ConsumedAt *time.Time      `json:"consumed_at,omitempty"`
	WaitID     *int64          `json:"wait_id,omitempty"`
	TaskID     *int64          `json:"task_id,omitempty"`
}

const signalColumns = `id, tenant, name, key, payload, dedupe_key, sent_by, sent_at, expires_at, ` + signalState + `, consumed_at, wait_id, task_id`

// signalState is a signal's state as readers see it: a pending signal past
// its expiry is expired at once (no wait can consume it any more), though
// the janitor marks it so only at its next sweep.
const signalState = `CASE WHEN state = 'pending' AND expires_at <= now() THEN 'expired' ELSE state END`

func scanSignal(row pgx.Row, more ...any) (Signal, error) {
	var s Signal
	err := row.Scan(append([]any{&s.ID, &s.Tenant, &s.Name, &s.Key, &s.Payload, &s.DedupeKey, &s.SentBy, &s.SentAt, &s.ExpiresAt,
		&s.State, &s.ConsumedAt, &s.WaitID, &s.TaskID}, more...)...)
	return s, err
}

// lockSQL serialises a signal and the waits for it: one lock per tenant,
// name and key, so whichever of the two commits second sees the first.
const lockSQL = `/* waits.lock */ SELECT pg_advisory_xact_lock(hashtextextended($1 || chr(31) || $2 || chr(31) || $3, 36))`

// takersSQL is FROM and WHERE of the waits a signal of tenant $1, name $2
// and key $3 may go to: waiting, before their deadline, of a task still
// live in the wait's generation. The oldest (ORDER BY w.id) takes it.
const takersSQL = `FROM waits w JOIN tasks t ON t.id = w.task_id AND t.generation = w.generation
	WHERE w.tenant = $1 AND w.kind = 'signal' AND w.signal = $2 AND w.key = $3 AND w.state = 'waiting' AND w.deadline > now()
		AND t.state IN ('waiting', 'running', 'queued', 'retrying')`

// Takes returns the wait a signal for w's name and key would go to now:
// the oldest waiting one whose task is live, as Send chooses (sendSQL), or
// false when none would take it. The console asks it before it sends for
// wait w, since the signal goes to that wait only if it is the oldest.
func (s *Store) Takes(ctx context.Context, w Wait) (Wait, bool, error) {
	row := s.db.QueryRow(ctx, `/* waits.takes */ SELECT `+waitColumns+` FROM waits WHERE id = (
		SELECT w.id `+takersSQL+`
		ORDER BY w.id LIMIT 1)`, w.Tenant, w.Signal, w.Key)
	first, err := scanWait(row)
	if errors.Is(err, pgx.ErrNoRows) {
		return Wait{}, false, nil
	}
	return first, err == nil, err
}

// WaitingFor lists the waits of any tenant waiting for signal name with
// key, oldest first (at most 10): what an operator is told of when a
// signal they sent reached none of them (another tenant's, or a wait
// that came after the same signal was consumed).
func (s *Store) WaitingFor(ctx context.Context, name, key string) ([]Wait, error) {
	rows, err := s.db.Query(ctx, `/* waits.waiting_for */ SELECT `+waitColumns+` FROM waits
		WHERE kind = 'signal' AND signal = $1 AND key = $2 AND state = 'waiting' ORDER BY id LIMIT 10`, name, key)
	if err != nil {
		return nil, fmt.Errorf("waits: %w", err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (Wait, error) { return scanWait(r) })
}

// sendSQL records a signal unless its dedupe key was sent; a fresh one is
// consumed at once by the oldest wait for it whose task still waits in
// that generation, and that task is woken. The signal is inserted in its
// final state, consumed or pending: a row a statement inserts is not
// visible to that statement's other parts, so it cannot be marked
// consumed after its insert.
//
// The wait's task is locked with the wait, before it (FOR UPDATE OF t, w:
// its rows are locked in that order), as a cancel takes them (the task,
// then its waits), so that they never deadlock. A candidate whose task or
// wait another statement changed meanwhile (a cancel, a timeout) is read
// again as it was left and passed over for the next, as a lock on the
// candidate alone would be.
var sendSQL = `/* waits.send */
WITH w AS (
	SELECT w.id, w.task_id ` + takersSQL + `
		AND NOT EXISTS (SELECT FROM signals WHERE tenant = $1 AND dedupe_key = $5)
	ORDER BY w.id LIMIT 1
	FOR UPDATE OF t, w
),
ins AS (
	INSERT INTO signals (tenant, name, key, payload, dedupe_key, request_hash, sent_by, expires_at, state, consumed_at, wait_id, task_id)
	SELECT $1, $2, $3, $4::jsonb, $5, $6::bytea, $7, now() + $8::bigint * interval '1 microsecond',
		CASE WHEN w.id IS NULL THEN 'pending' ELSE 'consumed' END, CASE WHEN w.id IS NOT NULL THEN now() END, w.id, w.task_id
	FROM (SELECT 1) one LEFT JOIN w ON true
	ON CONFLICT (tenant, dedupe_key) DO NOTHING
	RETURNING id, payload, wait_id
),
d AS (
	UPDATE waits SET state = 'done', result = ins.payload, signal_id = ins.id, ended_at = now(), ended_by = 'signal'
	FROM ins WHERE waits.id = ins.wait_id
	RETURNING waits.id, waits.task_id
),
` + claims.WakeTasks + `
SELECT ins.id, d.id FROM ins LEFT JOIN d ON true WHERE (SELECT count(*) FROM notified) >= 0`

// Sent is the outcome of Send.
type Sent struct {
	Signal Signal
	// Duplicate: the same signal was sent before (its dedupe key, the
	// same content); nothing changed.
	Duplicate bool
	// Woke is the wait that consumed it, if one did at once.
	Woke *Wait
}

// Send records signal p (after Validate) and hands it to the oldest wait
// for it, waking that wait's task, or keeps it for a wait to come until
// it expires. The same dedupe key with the same content is a duplicate;
// with another content, agentledger.ErrKeyReuse.
func (s *Store) Send(ctx context.Context, p SignalParams) (Sent, error) {
	if err := p.Validate(); err != nil {
		return Sent{}, err
	}
	hash, err := canonjson.HashValue(map[string]any{"name": p.Name, "key": p.Key, "payload": p.Payload})
	if err != nil {
		return Sent{}, agentledger.Invalid("payload", "is not JSON as agentledger reads it: %s", canonjson.Reason(err))
	}
	if p.DedupeKey == "" {
		p.DedupeKey = fmt.Sprintf("signal:%x", hash[:16])
	}
	var out Sent
	// A conflict PostgreSQL breaks (a race with another statement that
	// takes the rows in another order) is run again.
	err = dbaway.OnConflict(ctx, func() error {
		out = Sent{}
		return pgx.BeginFunc(ctx, s.db, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, lockSQL, p.Tenant, p.Name, p.Key); err != nil {
				return err
			}
			var id, waitID *int64
			err := tx.QueryRow(ctx, sendSQL, p.Tenant, p.Name, p.Key, p.Payload, p.DedupeKey, hash, p.SentBy,
				p.Retention.Microseconds()).Scan(&id, &waitID)
			if errors.Is(err, pgx.ErrNoRows) {
				var stored []byte
				// Acknowledged as sent: with synchronous standbys, not
				// before they have it (syncwait.Durable).
				sig, err := scanSignal(tx.QueryRow(ctx, `/* waits.sent */ SELECT `+signalColumns+`, request_hash FROM signals
				WHERE tenant = $1 AND dedupe_key = $2 AND `+syncwait.Durable, p.Tenant, p.DedupeKey), &stored)
				if err != nil {
					return err
				}
				switch {
				case bytes.Equal(stored, hash):
				case sig.Name == p.Name && sig.Key == p.Key:
					return agentledger.Errorf(agentledger.CodeKeyReused, "idempotency key %q was used for signal %d (%s key %s) with another payload",
						p.DedupeKey, sig.ID, sig.Name, sig.Key)
				default:
					return agentledger.Errorf(agentledger.CodeKeyReused, "idempotency key %q was used for another signal (%s key %s)",
						p.DedupeKey, sig.Name, sig.Key)
				}
				out = Sent{Signal: sig, Duplicate: true}
				return nil
			}
			if err != nil {
				return err
			}
			if out.Signal, err = scanSignal(tx.QueryRow(ctx, `/* waits.signal */ SELECT `+signalColumns+` FROM signals WHERE id = $1`, *id)); err != nil {
				return err
			}
			if waitID != nil {
				w, err := scanWait(tx.QueryRow(ctx, `/* waits.woken */ SELECT `+waitColumns+` FROM waits WHERE id = $1`, *waitID))
				if err != nil {
					return err
				}
				out.Woke = &w
			}
			return nil
		})
	})
	if err != nil {
		var coded *agentledger.CodedError
		if errors.As(err, &coded) {
			return Sent{}, err
		}
		return Sent{}, fmt.Errorf("sending signal %s key %s: %w", p.Name, p.Key, err)
	}
	return out, nil
}

// consumeSQL hands wait $1 the oldest pending signal for it, if one came
// and has not expired, while the wait still waits (an operator may end
// it meanwhile: its row lock decides).
var consumeSQL = `/* waits.consume */
WITH mine AS (
	SELECT id FROM waits WHERE id = $1 AND state = 'waiting' FOR UPDATE
),
sig AS (
	SELECT id, payload FROM signals
	WHERE tenant = $2 AND name = $3 AND key = $4 AND state = 'pending' AND expires_at > now() AND EXISTS (SELECT FROM mine)
	ORDER BY id LIMIT 1
	FOR UPDATE
),
consumed AS (
	UPDATE signals s SET state = 'consumed', consumed_at = now(), wait_id = $1, task_id = $5
	FROM sig WHERE s.id = sig.id
)
UPDATE waits w SET state = 'done', result = sig.payload, signal_id = sig.id, ended_at = now(), ended_by = 'signal'
FROM sig WHERE w.id = $1 AND w.state = 'waiting'
RETURNING ` + prefixed

// prefixed is waitColumns of table alias w.
var prefixed = waitColumnsOf("w.", "NULL::timestamptz")

// awaitSignal records w (a signal wait) and, while it waits, hands it a
// signal that came before it, all under the signal's lock.
func (s *Store) awaitSignal(ctx context.Context, w Wait, timeout time.Duration) (Wait, error) {
	var got Wait
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, lockSQL, w.Tenant, w.Signal, w.Key); err != nil {
			return err
		}
		var err error
		if got, err = ensure(ctx, tx, w, nil, timeout); err != nil || got.State != Waiting || !got.Deadline.After(time.Now()) {
			return err
		}
		done, err := scanWait(tx.QueryRow(ctx, consumeSQL, got.ID, got.Tenant, got.Signal, got.Key, got.TaskID))
		if errors.Is(err, pgx.ErrNoRows) {
			return nil // no signal yet
		}
		if err == nil {
			got = done
		}
		return err
	})
	return got, err
}

// ListSignalsParams filter ListSignals.
type ListSignalsParams struct {
	Tenant string
	Name   string
	// States; empty lists the pending ones (nobody consumed them yet).
	States []string
	Limit  int // default 100
}

// ListSignals returns signals, newest first.
func (s *Store) ListSignals(ctx context.Context, p ListSignalsParams) ([]Signal, error) {
	if len(p.States) == 0 {
		p.States = []string{"pending"}
	}
	if p.Limit <= 0 {
		p.Limit = 100
	}
	rows, err := s.db.Query(ctx, `/* waits.list_signals */ SELECT `+signalColumns+` FROM signals
		WHERE `+signalState+` = ANY ($1) AND ($2 = '' OR tenant = $2) AND ($3 = '' OR name = $3)
		ORDER BY sent_at DESC, id DESC LIMIT $4`, p.States, p.Tenant, p.Name, p.Limit)
	if err != nil {
		return nil, fmt.Errorf("signals: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Signal, error) { return scanSignal(r) })
	if err != nil {
		return nil, fmt.Errorf("signals: %w", err)
	}
	return out, nil
}

// ExpireSignals marks the pending signals past their expiry expired (up
// to limit), for the janitor; it returns how many.
func (s *Store) ExpireSignals(ctx context.Context, limit int) (int64, error) {
	tag, err := s.db.Exec(ctx, `/* waits.expire_signals */ UPDATE signals SET state = 'expired'
		WHERE id IN (SELECT id FROM signals WHERE state = 'pending' AND expires_at <= now() ORDER BY expires_at LIMIT $1
			FOR UPDATE SKIP LOCKED)`, limit)
	if err != nil {
		return 0, fmt.Errorf("expiring signals: %w", err)
	}
	return tag.RowsAffected(), nil
}

// SweepSignals is the janitor's sweep of signals: it marks up to batch
// pending signals past their expiry expired (visible as such to operators),
// then deletes up to batch signals consumed or expired more than window
// ago; it returns how many rows it touched, so that the janitor calls it
// again while a batch comes back full.
func (s *Store) SweepSignals(ctx context.Context, window time.Duration, batch int) (int64, error) {
	n, err := s.ExpireSignals(ctx, batch)
	if err != nil {
		return 0, err
	}
	tag, err := s.db.Exec(ctx, `/* waits.delete_signals */ DELETE FROM signals WHERE id IN (
		SELECT id FROM signals WHERE state <> 'pending' AND coalesce(consumed_at, expires_at) < now() - $1::interval
		LIMIT $2 FOR UPDATE SKIP LOCKED)`, window, batch)
	if err != nil {
		return n, fmt.Errorf("deleting old signals: %w", err)
	}
	return n + tag.RowsAffected(), nil
}
