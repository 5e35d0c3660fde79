// Package steps is the "steps" task kind: a declared list of tool calls run
// in order through the ledger, with no model involved. Later steps may use
// earlier results through references:
//
//	{"steps": [
//	  {"tool": "http_request", "args": {"method": "POST", "url": "https://billing/charges", "body": {"order": 42}}},
//	  {"tool": "create_task",  "args": {"kind": "receipt", "payload": {"charge": "${steps.0.body.id}"}}}
//	]}
//
// A string that is exactly one reference is replaced by the referenced JSON
// value (object, number, …); a reference inside a longer string is replaced
// by its text. A reference names an earlier step's result: status, body (and
// any path into it) or external_ref. Step i is journaled at "tool/<i>", so a
// replay or re-claim serves finished steps from the ledger and resolves the
// same arguments again.
package steps
