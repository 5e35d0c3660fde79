package ledger

import (
	"crypto/sha256"
	"encoding/hex"
	"unicode/utf8"

	"github.com/agentledger/agentledger/canonjson"
)

// CompensationPrefix begins the step path of a compensation: the one of
// the effect at tool/0 is at compensate/tool/0 (package saga).
const CompensationPrefix = "compensate/"

// Key domains keep the two derivations apart: a ledger key can never equal a
// downstream key.
const (
	effectDomain           = "agentledger.effect.v1"
	downstreamDomain       = "agentledger.downstream.v1"
	scopedDownstreamDomain = "agentledger.downstream.v2"
)

// EffectKey is the deterministic identity of one intended effect: the
// SHA-256 (hex) of the canonical JSON array [domain, tenant, task id,
// generation, step path, operation]. No time, attempt number or randomness
// enters it, so every attempt and every replay of the same task generation
// derives the same key for the same step.
func EffectKey(tenant string, taskID int64, generation int32, stepPath, operation string) string {
	return hashOf([]any{effectDomain, part(tenant), taskID, generation, part(stepPath), part(operation)})
}

// DownstreamKey is the Idempotency-Key sent to target for the effect with
// ledger key key. It is scoped per target, so two services never see the
// same key, and it is never the client's submission key.
func DownstreamKey(key, target string) string {
	return "al1-" + hashOf([]any{downstreamDomain, part(key), part(target)})
}

// ScopedDownstreamKey is DownstreamKey carrying scope, the identity of
// the database the effect is recorded in (migration 00042): two
// databases never send one key, though their task ids, tenants and steps
// are alike. Call.DownstreamKey gives the one the effect's task uses.
func ScopedDownstreamKey(scope, key, target string) string {
	return "al2-" + hashOf([]any{scopedDownstreamDomain, part(scope), part(key), part(target)})
}

// part is s as it enters a key. encoding/json writes invalid UTF-8 as
// U+FFFD, which would give "\xff" and "\uFFFD" one key; such a string
// enters as an object of its bytes instead, which no string equals. Valid
// strings (all real ones) enter as they are.
func part(s string) any {
	if utf8.ValidString(s) {
		return s
	}
	return map[string]string{"invalid_utf8": hex.EncodeToString([]byte(s))}
}

func hashOf(v []any) string {
	b, err := canonjson.MarshalValue(v)
	if err != nil {
		panic("ledger: strings and integers always encode: " + err.Error())
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// RequestHash is the SHA-256 of the canonical JSON of an effect's request
// (invariant I4: the same key must come with the same request).
func RequestHash(request []byte) ([]byte, error) { return canonjson.Hash(request) }
