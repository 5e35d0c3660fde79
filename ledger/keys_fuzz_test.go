package ledger_test

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/agentledger/agentledger/ledger"
)

// keyInput is what EffectKey and DownstreamKey derive from.
type keyInput struct {
	tenant     string
	taskID     int64
	generation int32
	stepPath   string
	operation  string
	target     string
}

func (in keyInput) String() string {
	return fmt.Sprintf("(tenant %q, task %d, generation %d, step %q, operation %q, target %q)",
		in.tenant, in.taskID, in.generation, in.stepPath, in.operation, in.target)
}

func (in keyInput) effectKey() string {
	return ledger.EffectKey(in.tenant, in.taskID, in.generation, in.stepPath, in.operation)
}

// maxSeenKeys bounds the keys FuzzKeys remembers per fuzz worker.
const maxSeenKeys = 1 << 16

// FuzzKeys checks the key derivation on any input: it never panics, a key
// is 64 hex digits (the downstream key with its al1- prefix), the same
// input always gives the same key, and different inputs never share one —
// across the run, and against the neighbours a weak encoding would confuse
// (a character moved across a field boundary, invalid UTF-8 and its
// replacement character).
func FuzzKeys(f *testing.F) {
	raw, err := os.ReadFile("testdata/keys.json")
	if err != nil {
		f.Fatal(err)
	}
	var vs []keyVector
	if err := json.Unmarshal(raw, &vs); err != nil {
		f.Fatal(err)
	}
	for _, v := range vs {
		f.Add(v.Tenant, v.TaskID, v.Generation, v.StepPath, v.Operation, v.Target)
	}
	f.Add("", int64(0), int32(0), "", "", "")
	f.Add("a\xff", int64(-1), int32(-1), "tool/0\x00", "op\"", "\\")
	var mu sync.Mutex
	seen := map[string]keyInput{}
	f.Fuzz(func(t *testing.T, tenant string, taskID int64, generation int32, stepPath, operation, target string) {
		in := keyInput{tenant, taskID, generation, stepPath, operation, target}
		key := in.effectKey()
		if b, err := hex.DecodeString(key); err != nil || len(b) != 32 || strings.ToLower(key) != key {
			t.Fatalf("EffectKey(%v) = %q, not 64 lowercase hex digits", in, key)
		}
		down := ledger.DownstreamKey(key, target)
		if b, err := hex.DecodeString(strings.TrimPrefix(down, "al1-")); err != nil || len(b) != 32 || !strings.HasPrefix(down, "al1-") {
			t.Fatalf("DownstreamKey(%q, %q) = %q, not al1-<64 hex digits>", key, target, down)
		}
		if again := in.effectKey(); again != key {
			t.Fatalf("EffectKey(%v) gave %q, then %q", in, key, again)
		}
		if down == "al1-"+key {
			t.Fatalf("the downstream key of %v is its effect key", in)
		}
		for _, other := range neighbours(in) {
			if other.target != in.target && ledger.DownstreamKey(key, other.target) == down {
				t.Fatalf("targets %q and %q share the downstream key %s", in.target, other.target, down)
			}
			if other.target = in.target; other != in && other.effectKey() == key {
				t.Fatalf("%v and %v share the effect key %s", in, other, key)
			}
		}
		in.target = "" // the effect key does not depend on it
		mu.Lock()
		defer mu.Unlock()
		if prev, ok := seen[key]; ok && prev != in {
			t.Fatalf("%v and %v share the effect key %s", prev, in, key)
		}
		if len(seen) < maxSeenKeys {
			seen[key] = in
		}
	})
}

// neighbours are inputs next to in that a weak encoding would give in's
// key: one byte moved across each boundary between two string fields, and
// each field with its invalid UTF-8 replaced by U+FFFD.
func neighbours(in keyInput) []keyInput {
	var out []keyInput
	fields := func(k *keyInput) []*string { return []*string{&k.tenant, &k.stepPath, &k.operation, &k.target} }
	for i := 0; i+1 < 4; i++ {
		l, r := in, in
		a, b := fields(&l)[i], fields(&l)[i+1]
		if *a != "" { // last byte of a to the front of b
			*a, *b = (*a)[:len(*a)-1], (*a)[len(*a)-1:]+*b
			out = append(out, l)
		}
		a, b = fields(&r)[i], fields(&r)[i+1]
		if *b != "" { // first byte of b to the end of a
			*a, *b = *a+(*b)[:1], (*b)[1:]
			out = append(out, r)
		}
	}
	for i := range 4 {
		k := in
		if p := fields(&k)[i]; !utf8.ValidString(*p) {
			*p = strings.ToValidUTF8(*p, "\uFFFD")
			out = append(out, k)
		}
	}
	return out
}
