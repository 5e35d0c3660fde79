// Package tenants holds the tenants of the HTTP API, their bearer tokens and
// their shares of the claim; it owns the tenants, api_tokens and
// tenant_shares tables and all their SQL (queries.go). The claim (package
// claims) reads tenant_shares in its own statement.
//
// A token is "alt_" followed by 43 characters of base64url: 32 random bytes,
// shown once when it is created. Only its SHA-256 and its first 12
// characters (the prefix, so operators can tell tokens apart) are stored.
// Because a token is high-entropy random, a fast hash suffices, and
// Authenticate finds a token by the hash of what it is given through the
// unique index: nothing compares a secret byte by byte, so the answer's
// timing says nothing about how close a guess came.
//
// Tokens never appear in errors or logs; this package prints only prefixes.
package tenants
