// Package webhooks receives signed webhook deliveries and turns each into
// exactly one task, or exactly one signal. It owns the inbox table.
//
// A Handler serves POST /v1/hooks/{source} (the API server mounts it with
// the pattern "POST /v1/hooks/{source}"). For each request it:
//
//  1. finds the source named by the path (404 unknown_source);
//  2. reads the raw body, at most Config.MaxBody bytes (413 body_too_large);
//  3. verifies the signature over the raw body before parsing anything,
//     comparing MACs in constant time (401 bad_signature; Slack also
//     401 stale_timestamp) — a refused request stores nothing;
//  4. reads the delivery id (400 missing_delivery_id, invalid_delivery_id)
//     and the event — a header of either given twice, or folded by a
//     proxy into one comma-separated line, is 400 invalid_delivery_id or
//     malformed_request naming it — and requires a JSON body (400
//     invalid_body) that PostgreSQL can store (422 invalid_request for a
//     \u0000 in a string: the API's rule, 400 for what cannot be read, 422
//     for a value refused);
//  5. in one transaction inserts (source, delivery id, SHA-256 of the raw
//     body) into the inbox with INSERT … ON CONFLICT DO NOTHING and, only
//     if the row is new, enqueues the task (claims.Store.Enqueue,
//     submission key "hook:<source>:<delivery id>") and records its id in
//     the row.
//
// A new delivery is answered 202 {"task_id": N}; a delivery seen before —
// a redelivery, a retry, the same delivery arriving twice at once, or the
// same signed body under a fresh delivery id (a captured delivery sent
// again: GitHub's and a plain hmac source's signatures cover only the body;
// a timestamped hmac source's cover the id, which is hashed with its body,
// so that a fresh id it signed is a new delivery) — 200 {"duplicate": true, "task_id": N}, having done nothing (the inbox's
// unique indexes decide, invariant I6). A known delivery id with another
// body is 409 delivery_conflict. The work is a few statements, so the
// answer comes well within the senders' timeouts (GitHub 10 s, Slack 3 s).
// Failures are RFC 9457 application/problem+json with a stable "code"
// (the Code constants) and the type ProblemType + code, as in the HTTP
// API; 503 unavailable asks the sender to retry.
//
// # Source types
//
//   - github: X-Hub-Signature-256 is "sha256=" + hex HMAC-SHA256 of the
//     body under the webhook secret; the delivery id is X-GitHub-Delivery
//     and the event X-GitHub-Event. A form-encoded delivery's JSON is its
//     "payload" field.
//   - slack: X-Slack-Signature is "v0=" + hex HMAC-SHA256 of
//     "v0:" + X-Slack-Request-Timestamp + ":" + body under the signing
//     secret, and the timestamp must be within SlackMaxSkew (5 minutes) of
//     Config.Now. The delivery id is the Events API body's "event_id" and
//     the event its event.type. A verified url_verification request is
//     answered 200 {"challenge": …} and creates no task. Slash commands and
//     interactivity requests carry no event_id and are refused (400).
//   - hmac: the header named by Header is the hex HMAC-SHA256 of the body,
//     optionally prefixed "sha256="; the delivery id is the header named by
//     DeliveryHeader and the event the one named by EventHeader, if any.
//     With TimestampHeader ("timestamp_header") the signature is of
//     "<timestamp>.<delivery id>.<body>", the timestamp (Unix seconds)
//     within MaxSkew of Config.Now (else 401 stale_timestamp): a captured
//     delivery can be sent again neither later nor under another id. Its
//     delivery ids may not contain '.' (400 invalid_delivery_id), which
//     would make that string ambiguous; nor may its id header be given
//     twice or folded (400 invalid_delivery_id, before the signature,
//     which covers the id, is checked).
//
// Delivery ids are 1–128 printable ASCII characters without spaces, and
// one read from a header holds no comma (a folded list, as above).
//
// # Tasks
//
// Each source is a task template: tenant, queue, kind, priority and
// max_attempts. With payload "envelope" (the default) the task's payload is
//
//	{"source": "<name>", "delivery_id": "<id>", "event": "<event or empty>", "body": <the JSON body>}
//
// and with payload "body" it is the JSON body itself.
//
// # Signals
//
// A source with "signal" (Source.Signal) makes each delivery a signal of
// its tenant's instead of a task (package waits): it wakes the task
// waiting for the signal's name and correlation key — a payment
// provider's callback resumes the task that waits for the payment — or is
// kept for one until its retention ends. The name is fixed ("name") or
// read from the body ("name_from", a JSON pointer, RFC 6901); the
// correlation key is read from the body ("key_from": a string or an
// integer); the payload, the waiting step's result, is the body or the
// part of it "payload_from" points at. The signal passes the door as the
// source's (admit.Webhook) in the inbox's transaction, with the dedupe
// key "hook:<source>:<delivery id>" and sent by "webhook:<source>". A new
// delivery is answered 202 {"signal_id": N, "state": "consumed" or
// "pending", "task_id": the task it woke}; one seen before 200 with
// "duplicate": true and the same signal. A body that names no valid
// signal is 422 invalid_request, and nothing is stored.
//
// The inbox keeps a delivery id for as long as the janitor keeps its row
// (invariant I7: longer than the senders redeliver). After that, a
// redelivery still finds its task through the submission key and is
// answered as a duplicate.
//
// # The sources file
//
// LoadSources reads a JSON array of sources:
//
//	[
//	  {"name": "github", "type": "github", "secret_env": "GITHUB_WEBHOOK_SECRET",
//	   "queue": "hooks", "kind": "github_event"},
//	  {"name": "slack", "type": "slack", "secret_file": "/run/secrets/slack-signing-secret",
//	   "kind": "slack_event", "priority": 10},
//	  {"name": "billing", "type": "hmac", "secret": "…",
//	   "header": "X-Billing-Signature", "delivery_header": "X-Billing-Delivery",
//	   "event_header": "X-Billing-Event", "tenant": "acme", "kind": "billing_event",
//	   "max_attempts": 5, "payload": "body"},
//	  {"name": "payments", "type": "hmac", "secret_env": "PAYMENTS_WEBHOOK_SECRET",
//	   "header": "X-Pay-Signature", "delivery_header": "X-Pay-Delivery", "tenant": "acme",
//	   "signal": {"name_from": "/type", "key_from": "/data/object/metadata/order_id",
//	              "payload_from": "/data/object"}}
//	]
//
// Fields: "name" (required; 1–63 of a-z 0-9 _ . -, starting with a letter
// or digit), "type" (required: github, slack or hmac), exactly one of
// "secret" (inline), "secret_env" (an environment variable's name) or
// "secret_file" (a file's path, relative to the sources file's directory;
// surrounding white space is ignored), "header", "delivery_header",
// "event_header" and "timestamp_header" (type hmac only; the first two
// required), "tenant"
// (default "default"), "queue" (default "default"), "kind" (required),
// "priority" (0..100, default 0), "max_attempts" (default 25), "payload"
// ("envelope" or "body", default "envelope"); or, instead of kind, queue,
// priority, max_attempts and payload, "signal": {"name" or "name_from",
// "key_from", "payload_from", "retention" (a duration, default 168h)}.
// Unknown fields are errors.
// Errors name the file, the source and the field, never a secret.
//
// # Secrets
//
// A Source prints (fmt with any verb, slog, encoding/json) with its secret
// redacted. Logs carry the source, delivery id, event, task id and problem
// code; never a secret, a signature or a body.
package webhooks
