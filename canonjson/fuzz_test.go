package canonjson

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"os"
	"strings"
	"sync"
	"testing"
)

// rejected are inputs Marshal must refuse (TestRejects), seeds of the
// fuzz target.
var rejected = []string{``, `{`, `{"a":1}{}`, `{"a":1,"a":2}`, `[{"x":{"y":1,"y":1}}]`, `nul`}

// maxSeen bounds the hashes FuzzMarshal remembers per fuzz worker.
const maxSeen = 1 << 16

// FuzzMarshal checks the canonical form on any bytes: invalid JSON is an
// error, valid JSON with unique keys is not; the form is idempotent, valid
// JSON, the same for the same document re-encoded (keys reordered,
// whitespace and escapes changed), and two different forms never share a
// hash within the run.
func FuzzMarshal(f *testing.F) {
	raw, err := os.ReadFile("testdata/vectors.json")
	if err != nil {
		f.Fatal(err)
	}
	var vs []vector
	if err := json.Unmarshal(raw, &vs); err != nil {
		f.Fatal(err)
	}
	for _, v := range vs {
		f.Add([]byte(v.Input))
	}
	for _, in := range rejected {
		f.Add([]byte(in))
	}
	var mu sync.Mutex
	seen := map[[sha256.Size]byte]string{} // hash → canonical form
	f.Fuzz(func(t *testing.T, in []byte) {
		c, err := Marshal(in)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "canonjson: ") {
				t.Errorf("error %q does not say where it comes from", err)
			}
			// Valid JSON is refused only for a duplicate key.
			if json.Valid(in) && !strings.Contains(err.Error(), "duplicate object key") {
				t.Fatalf("valid JSON %q refused: %v", in, err)
			}
			return
		}
		if !json.Valid(in) {
			t.Fatalf("invalid JSON %q accepted as %s", in, c)
		}
		if !json.Valid(c) {
			t.Fatalf("canonical form %q is not JSON", c)
		}
		again, err := Marshal(c)
		if err != nil || !bytes.Equal(again, c) {
			t.Fatalf("not idempotent: %q → %q → %q, %v", in, c, again, err)
		}
		// The same document, re-encoded by encoding/json through
		// map[string]any: keys sorted, HTML escaped, no whitespace.
		dec := json.NewDecoder(bytes.NewReader(in))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("decoding accepted input %q: %v", in, err)
		}
		for _, variant := range variants(t, v) {
			vc, err := Marshal(variant)
			if err != nil || !bytes.Equal(vc, c) {
				t.Fatalf("same document, other form: %q → %q, but %q → %q, %v", in, c, variant, vc, err)
			}
		}
		sum, err := Hash(in)
		if err != nil || !bytes.Equal(sum, hashOf(c)) {
			t.Fatalf("Hash(%q) = %x, %v; want the SHA-256 of %q", in, sum, err, c)
		}
		var key [sha256.Size]byte
		copy(key[:], sum)
		mu.Lock()
		defer mu.Unlock()
		if prev, ok := seen[key]; ok && prev != string(c) {
			t.Fatalf("%q and %q share the hash %x", prev, c, sum)
		}
		if len(seen) < maxSeen {
			seen[key] = string(c)
		}
	})
}

// variants encodes v again in other forms of the same document: compact,
// indented, and with HTML escaping off.
func variants(t *testing.T, v any) [][]byte {
	t.Helper()
	compact, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	indented, err := json.MarshalIndent(v, " ", "\t")
	if err != nil {
		t.Fatal(err)
	}
	var plain bytes.Buffer
	enc := json.NewEncoder(&plain)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return [][]byte{compact, indented, plain.Bytes()}
}

func hashOf(b []byte) []byte {
	sum := sha256.Sum256(b)
	return sum[:]
}
