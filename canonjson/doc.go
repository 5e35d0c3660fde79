// Package canonjson writes JSON in one canonical form and hashes it, so that
// two requests that mean the same thing produce the same request hash
// (invariant I4: same key, same request).
//
// The canonical form: object keys sorted by their UTF-8 bytes, no
// insignificant whitespace, numbers kept exactly as written (1.0 stays 1.0),
// strings re-escaped the way encoding/json does without HTML escaping.
// Duplicate object keys are rejected: their meaning is ambiguous.
package canonjson
