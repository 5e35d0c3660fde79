package claims

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/canonjson"
	"github.com/agentledger/agentledger/tracing"
)

// Defaults applied by Enqueue to zero fields.
const (
	DefaultTenant      = agentledger.OperatorTenant
	DefaultQueue       = "default"
	DefaultMaxAttempts = 25
	// MaxPayload is the largest payload a task may carry, in bytes, at
	// every door: the HTTP API's whole body is capped at as much, and a
	// task's payload is read whole by every worker, list and console that
	// shows it.
	MaxPayload = 1 << 20
)

// EnqueueParams describes one task to submit.
type EnqueueParams struct {
	Tenant      string          // default "default"
	Queue       string          // default "default"
	Kind        string          // required
	Payload     json.RawMessage // any JSON value of at most MaxPayload bytes; default {}
	Priority    int16           // lower runs first; 0..100
	RunAt       time.Time       // zero: now
	MaxAttempts int32           // default 25

	// SubmissionKey makes the submission idempotent per tenant: the same key
	// with the same request returns the existing task; with a different
	// request it is ErrKeyReuse.
	SubmissionKey string

	// Needs are what the task needs of the pool that runs it beyond its
	// kind (registry.Caps names), as the door found them in its payload;
	// stored sorted, without duplicates. They follow from kind and payload,
	// so the submission key's request hash does not cover them.
	Needs []string
}

// EnqueueResult is one submitted task and whether it already existed.
type EnqueueResult struct {
	Task      *agentledger.Task
	Duplicate bool
}

// Validate fills defaults and checks p; the error names the bad field and
// matches agentledger.ErrInvalid.
func (p *EnqueueParams) Validate() error {
	if p.Tenant == "" {
		p.Tenant = DefaultTenant
	}
	if p.Queue == "" {
		p.Queue = DefaultQueue
	}
	if len(p.Payload) == 0 {
		p.Payload = json.RawMessage(`{}`)
	}
	if p.MaxAttempts == 0 {
		p.MaxAttempts = DefaultMaxAttempts
	}
	switch {
	case !agentledger.ValidName(p.Tenant):
		return agentledger.Invalid("tenant", "%q must be 1-128 characters of letters, digits, '.', '_', ':' or '-'", agentledger.Clip(p.Tenant))
	case !agentledger.ValidName(p.Queue):
		return agentledger.Invalid("queue", "%q must be 1-128 characters of letters, digits, '.', '_', ':' or '-'", agentledger.Clip(p.Queue))
	case p.Kind == "":
		return agentledger.Invalid("kind", "is required")
	case !agentledger.ValidName(p.Kind):
		return agentledger.Invalid("kind", "%q must be 1-128 characters of letters, digits, '.', '_', ':' or '-'", agentledger.Clip(p.Kind))
	case len(p.Payload) > MaxPayload:
		return agentledger.Invalid("payload", "is %d bytes; at most %d (1 MiB)", len(p.Payload), MaxPayload)
	case !json.Valid(p.Payload):
		return agentledger.Invalid("payload", "is not valid JSON")
	case !utf8.Valid(p.Payload):
		return agentledger.Invalid("payload", "is not valid UTF-8")
	case holdsNUL(p.Payload):
		return agentledger.Invalid("payload", `holds \u0000 in a string, which PostgreSQL's jsonb cannot store`)
	case loneSurrogate(p.Payload):
		return agentledger.Invalid("payload", `holds a lone surrogate escape in a string (a \uD800-\uDFFF not in a high-low pair), which PostgreSQL's jsonb cannot store`)
	case p.Priority < 0 || p.Priority > 100:
		return agentledger.Invalid("priority", "%d is outside 0..100 (lower runs first)", p.Priority)
	case p.MaxAttempts < 1 || p.MaxAttempts > 1000:
		return agentledger.Invalid("max_attempts", "%d is outside 1..1000", p.MaxAttempts)
	case p.SubmissionKey != "" && !ValidKey(p.SubmissionKey):
		return agentledger.Invalid("submission_key", "must be 1-255 printable ASCII characters")
	}
	for _, n := range p.Needs {
		if n == "" || len(n) > 1024 || strings.ContainsAny(n, "\n\x00") || !utf8.ValidString(n) {
			return agentledger.Invalid("needs", "%q is not a capability name", n)
		}
	}
	p.Needs = sortedSet(p.Needs)
	return nil
}

// sortedSet returns names sorted without duplicates; nil when empty.
func sortedSet(names []string) []string {
	if len(names) == 0 {
		return nil
	}
	names = slices.Clone(names)
	slices.Sort(names)
	return slices.Compact(names)
}

// ValidKey reports whether k is 1–255 printable ASCII characters, the rule
// for submission and idempotency keys.
func ValidKey(k string) bool {
	if len(k) < 1 || len(k) > 255 {
		return false
	}
	for i := 0; i < len(k); i++ {
		if k[i] < 0x20 || k[i] > 0x7e {
			return false
		}
	}
	return true
}

// requestHash is what "the same request" means for a submission: the
// canonical JSON of what the task is. RunAt is left out on purpose: it is
// scheduling, often relative to the caller's clock ("in 5 minutes"), and a
// retry must still be recognised as the same submission.
func (p *EnqueueParams) requestHash() ([]byte, error) {
	return canonjson.HashValue(struct {
		Queue       string          `json:"queue"`
		Kind        string          `json:"kind"`
		Payload     json.RawMessage `json:"payload"`
		Priority    int16           `json:"priority"`
		MaxAttempts int32           `json:"max_attempts"`
	}{p.Queue, p.Kind, p.Payload, p.Priority, p.MaxAttempts})
}

// Enqueue submits one task. See EnqueueBatch.
func (s *Store) Enqueue(ctx context.Context, p EnqueueParams) (EnqueueResult, error) {
	res, err := s.EnqueueBatch(ctx, []EnqueueParams{p})
	if err != nil {
		return EnqueueResult{}, err
	}
	return res[0], nil
}

// EnqueueBatch submits tasks in one statement and returns one result per
// param, in order. Keyed submissions are decided by the unique index on
// (tenant, submission_key): an existing task with the same request hash comes
// back with Duplicate set; with a different hash the whole call fails with
// ErrKeyReuse and nothing is inserted. Validation errors insert nothing.
func (s *Store) EnqueueBatch(ctx context.Context, ps []EnqueueParams) ([]EnqueueResult, error) {
	return s.enqueue(ctx, ps, nil)
}

// enqueue is EnqueueBatch; a non-nil start (one task, EnqueueStart) leases
// the task as it inserts it when it may run now (enqueueStartSQL).
func (s *Store) enqueue(ctx context.Context, ps []EnqueueParams, start *startLease) ([]EnqueueResult, error) {
	n := len(ps)
	if n == 0 {
		return nil, nil
	}
	// The submission span: the tasks store its context, and their attempts
	// join its trace (the caller's, when ctx carries one).
	ctx, span := tracing.StartKind(ctx, "agentledger.submit", trace.SpanKindProducer)
	defer span.End()
	var (
		tenants, queues, kinds, keys = make([]string, n), make([]string, n), make([]string, n), make([]*string, n)
		payloads                     = make([]string, n)
		prios                        = make([]int16, n)
		runAts                       = make([]*time.Time, n)
		maxes                        = make([]int32, n)
		hashes                       = make([][]byte, n)
		needs                        = make([]string, n) // each "\n"-joined; "" for none
	)
	for i := range ps {
		p := &ps[i]
		if err := p.Validate(); err != nil {
			if n > 1 {
				return nil, fmt.Errorf("task %d: %w", i, err)
			}
			return nil, err
		}
		tenants[i], queues[i], kinds[i] = p.Tenant, p.Queue, p.Kind
		payloads[i], prios[i], maxes[i] = string(p.Payload), p.Priority, p.MaxAttempts
		needs[i] = strings.Join(p.Needs, "\n")
		if !p.RunAt.IsZero() {
			t := p.RunAt
			runAts[i] = &t
		}
		if p.SubmissionKey != "" {
			h, err := p.requestHash()
			if err != nil { // a key given twice in an object: two readings of one request
				return nil, agentledger.Invalid("payload", "is not JSON as agentledger reads it: %s", canonjson.Reason(err))
			}
			k := p.SubmissionKey
			keys[i], hashes[i] = &k, h
		}
	}

	if span.IsRecording() { // the first task's; a batch is mostly of one kind
		span.SetAttributes(tracing.TaskCount.Int(n), tracing.TaskKind.String(ps[0].Kind),
			tracing.TaskQueue.String(ps[0].Queue), tracing.TaskTenant.String(ps[0].Tenant))
	}

	// One statement is atomic by itself. A batch with several keyed tasks
	// runs in a transaction, so that if one key turns out to be reused,
	// nothing of the batch stays inserted; otherwise the round trips of
	// BEGIN and COMMIT would be most of a single task's cost.
	var tx DB = s.db
	var own pgx.Tx // the transaction this call began, if any
	keyed := 0
	for _, k := range keys {
		if k != nil {
			keyed++
		}
	}
	if keyed > 0 && n > 1 {
		t, err := s.db.Begin(ctx)
		if err != nil {
			return nil, err
		}
		defer t.Rollback(ctx) //nolint:errcheck // after Commit it is a no-op
		tx, own = t, t
	}

	q, args := enqueueSQL, []any{tenants, queues, kinds, payloads, prios,
		runAts, maxes, keys, hashes, s.Now.Param(), nullable(tracing.TraceParent(ctx)), needs, queues[0], tenants[0]}
	for i := range tenants {
		if tenants[i] != tenants[0] || queues[i] != queues[0] {
			q, args = enqueueManySQL, args[:12]
			break
		}
	}
	if start != nil && n == 1 {
		q, args = enqueueStartSQL, append(args, start.worker, start.lease, start.kinds, start.caps)
	}
	rows, err := tx.Query(ctx, q, args...)
	if err != nil {
		span.SetStatus(codes.Error, err.Error())
		return nil, fmt.Errorf("enqueue: %w", err)
	}
	inserted, err := collectTasks(rows)
	if err != nil {
		return nil, fmt.Errorf("enqueue: %w", err)
	}

	out := make([]EnqueueResult, n)
	// Rows come back in input order (ORDER BY ordinality), minus the skipped
	// keyed ones, which are found by key below.
	var missing []int
	j := 0
	for i := range ps {
		if j < len(inserted) && sameSubmission(inserted[j], &ps[i]) {
			out[i].Task = inserted[j]
			j++
			continue
		}
		missing = append(missing, i)
	}
	if j != len(inserted) {
		return nil, fmt.Errorf("enqueue: internal error: %d of %d inserted rows unmatched", len(inserted)-j, len(inserted))
	}
	if len(missing) > 0 {
		if err := resolveDuplicates(ctx, tx, ps, missing, hashes, out); err != nil {
			return nil, err
		}
	}
	if own != nil {
		if err := own.Commit(ctx); err != nil {
			return nil, fmt.Errorf("enqueue: %w", err)
		}
	}
	return out, nil
}

// sameSubmission reports whether inserted row t is the one made from p.
func sameSubmission(t *agentledger.Task, p *EnqueueParams) bool {
	return t.Tenant == p.Tenant && t.Kind == p.Kind && t.Queue == p.Queue &&
		t.SubmissionKey == p.SubmissionKey
}

// resolveDuplicates fills out[i] for submissions the unique index skipped:
// the existing task came from an earlier call or from earlier in this batch.
func resolveDuplicates(ctx context.Context, tx DB, ps []EnqueueParams, missing []int,
	hashes [][]byte, out []EnqueueResult) error {
	var tenants, keys []string
	for _, i := range missing {
		if ps[i].SubmissionKey == "" {
			return fmt.Errorf("enqueue: internal error: unkeyed task %d was not inserted", i)
		}
		tenants = append(tenants, ps[i].Tenant)
		keys = append(keys, ps[i].SubmissionKey)
	}
	rows, err := tx.Query(ctx, lookupKeysSQL, tenants, keys)
	if err != nil {
		return fmt.Errorf("enqueue: %w", err)
	}
	type existing struct {
		task *agentledger.Task
		hash []byte
	}
	found := map[[2]string]existing{}
	for rows.Next() {
		var r taskRow
		var h []byte
		if err := rows.Scan(append(r.fields(), &h)...); err != nil {
			rows.Close()
			return fmt.Errorf("enqueue: %w", err)
		}
		found[[2]string{r.Tenant, deref(r.SubmissionKey)}] = existing{r.toTask(), h}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("enqueue: %w", err)
	}
	for _, i := range missing {
		e, ok := found[[2]string{ps[i].Tenant, ps[i].SubmissionKey}]
		if !ok {
			// Inserted by a concurrent transaction that then rolled back
			// cannot happen: ON CONFLICT waited for it. Only a delete
			// (retention) between the two statements gets here.
			return fmt.Errorf("enqueue: task with submission key vanished during enqueue; retry")
		}
		if !bytes.Equal(e.hash, hashes[i]) {
			return fmt.Errorf("submission key %q (task %d): %w", ps[i].SubmissionKey, e.task.ID, agentledger.ErrKeyReuse)
		}
		out[i] = EnqueueResult{Task: e.task, Duplicate: true}
	}
	return nil
}

// holdsNUL reports whether a JSON text has a string holding U+0000 (jsonb
// refuses it). The byte scan is the fast path; a match is confirmed by
// decoding, since `\\u0000` is a backslash and "u0000".
func holdsNUL(raw json.RawMessage) bool {
	if !bytes.Contains(raw, []byte(`\u0000`)) {
		return false
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		if s, ok := tok.(string); ok && strings.ContainsRune(s, 0) {
			return true
		}
	}
}

// loneSurrogate reports whether a JSON text (valid) escapes a UTF-16
// surrogate that is not half of a pair, high then low: jsonb refuses it
// where encoding/json reads it as U+FFFD, so only the escapes tell.
func loneSurrogate(raw json.RawMessage) bool {
	if !bytes.Contains(raw, []byte(`\ud`)) && !bytes.Contains(raw, []byte(`\uD`)) {
		return false
	}
	hex := func(i int) (rune, bool) {
		if i+6 > len(raw) || raw[i] != '\\' || raw[i+1] != 'u' {
			return 0, false
		}
		v, err := strconv.ParseUint(string(raw[i+2:i+6]), 16, 16)
		return rune(v), err == nil
	}
	inString := false
	for i := 0; i < len(raw); i++ {
		switch c := raw[i]; {
		case c == '"':
			inString = !inString
		case inString && c == '\\':
			r, ok := hex(i)
			if !ok {
				i++ // an escape of one character: skip it
				continue
			}
			switch {
			case r >= 0xD800 && r <= 0xDBFF:
				if low, ok := hex(i + 6); !ok || low < 0xDC00 || low > 0xDFFF {
					return true
				}
				i += 11 // the pair
			case r >= 0xDC00 && r <= 0xDFFF:
				return true
			default:
				i += 5
			}
		}
	}
	return false
}

// nullable is s, or NULL when empty.
func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
