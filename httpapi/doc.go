// Package httpapi is the HTTP API of agentd: tasks submitted, read,
// listed, cancelled and replayed by tenants holding bearer tokens, every
// mutation made idempotent by its Idempotency-Key. It owns the
// idempotency_keys table and its SQL (queries.go).
//
// # Routes
//
//	POST /v1/tasks               201 + Location: the task (CreateTaskRequest)
//	GET  /v1/tasks/{id}          200: the task
//	GET  /v1/tasks               200: a TaskList; ?state=&queue=&kind=&limit=&cursor=
//	POST /v1/tasks/{id}/cancel   200 cancelled (now or before), 202 running: its attempt stops before its next call
//	POST /v1/tasks/{id}/replay   202: queued to run again, same generation
//	POST /v1/tasks/{id}/compensate 202: its completed effects are undone, newest first
//	GET  /v1/approvals           200: an ApprovalList, pending by default; ?state=&task=&limit=
//	GET  /v1/approvals/{id}      200: the approval request
//	POST /v1/approvals/{id}/approve, /deny
//	                             200: decided (DecideRequest); 409 decided before, with "approval" as it stands;
//	                             403 unless the tenant's grant has Decide
//	POST /v1/signals             201: the signal (SendSignalRequest), consumed by the task it woke or pending
//	GET  /v1/signals             200: a SignalList, pending by default; ?state=&name=&limit=
//	GET  /v1/waits               200: a WaitList, waiting by default; ?state=&task=&kind=&limit=
//	GET  /v1/waits/{id}          200: the wait
//	POST /v1/waits/{id}/end      200: ended (EndWaitRequest); 409 ended before, with "wait" as it stands
//	POST /v1/hooks/{source}      Config.Hooks, without bearer authentication
//
// Every /v1/tasks, /v1/approvals, /v1/signals and /v1/waits route takes "Authorization: Bearer
// <token>" (package tenants) and sees the token's tenant only: another
// tenant's task, approval request or wait is 404, never 403, and a signal
// wakes only the tenant's own tasks. Lists run newest first; next_cursor, an opaque string, fetches
// the next page and is null on the last one.
//
// # Errors
//
// Errors are application/problem+json (RFC 9457, type Problem) with a
// stable code, mapped from errors in one table (problem.go): unknown or
// revoked tokens 401, not found 404, state conflicts 409, a body over
// Config.MaxBody 413, not JSON by its media type 415. A 5xx says nothing of
// its cause (it is logged).
//
// Input is refused by one rule: 422 invalid_request when the body is a
// JSON object and one of its fields is refused — unknown, of the wrong
// JSON type, out of range, badly formed (a run_at that is not RFC 3339),
// not allowed (another tenant, a payload that does not fit its kind) —
// with "field" naming it; 400 for everything that is not a field of the
// body: a body that is not a JSON object (malformed_request), a query
// parameter (invalid_parameter, "field" naming it), the Idempotency-Key
// (idempotency_key_missing, _invalid, _duplicated), and any header value
// with a control character, which net/http refuses before routing
// (malformed_request, rewritten from its plain-text answer by Serve).
//
// # Idempotency-Key
//
// Every mutating route takes an Idempotency-Key (required unless
// Config.IdempotencyKeyOptional), scoped by tenant and operation (method
// and route pattern, e.g. "POST /v1/tasks"): 1-255 printable ASCII
// characters, bare or as an RFC 8941 quoted string. A request's
// fingerprint is the SHA-256 of its method, path and the canonical JSON
// hash of its body, so that key order and whitespace do not matter.
//
//  1. The token, the header, the body and the fields are checked first; a
//     failure is a 4xx and stores nothing. A missing, empty, too long,
//     non-printable, repeated or listed key is 400.
//  2. INSERT … ON CONFLICT DO NOTHING reserves the key in flight, locked
//     for Config.InFlightLease. If the key has a record: another
//     fingerprint is 422 idempotency_key_reused; a completed one answers
//     its stored status, headers and body, byte for byte, with
//     Idempotent-Replayed: true; one in flight and locked is 409
//     idempotency_key_in_flight with Retry-After; one in flight whose lock
//     ran out (its request crashed) is taken over by a conditional UPDATE.
//  3. The action runs, bounded by the lock, and its answer is built in full.
//  4. A 2xx, and a 4xx the action decided (404, 409: the answer at the time
//     it ran), is stored and the record completed. A 5xx, 408 or 429 is not
//     stored: the record is released — kept in flight, its lock ended — so
//     that the client may retry at once. Both writes are fenced on the
//     lock's end time, which every holder sets anew: a request whose lock
//     was taken over stores nothing.
//
// POST /v1/tasks is exactly-once beyond the record: the task is enqueued
// with the submission key "api:<record created_at, µs>:<key>" (a key too
// long to fit is hashed: "api-sha256:<µs>:<hex>"), so a crash
// (or a 5xx) between the enqueue and the stored answer leaves the record in
// flight, and the retry that takes it over finds the same task and answers
// 201 with it. The creation time is in the submission key so that a key
// whose record was reaped (its retention window over) makes a new task, as
// a new record should; a reaper must therefore keep in-flight records at
// least as long as completed ones. The "api:" prefix of submission keys is
// the API's: agentctl submit --idempotency-key should not use it.
//
// POST /v1/signals is exactly-once the same way: the signal's dedupe key
// is the record's submission key, so the retry that takes over a crashed
// request finds the signal it sent, and answers 201 with it.
package httpapi
