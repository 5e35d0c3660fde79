package refs

import (
	"bytes"
	"encoding/json"
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/canonjson"
	"github.com/agentledger/agentledger/ledger"
)

// fuzzRE is a reference pattern as its users write theirs (saga's
// ${self.…}, steps' ${steps.N.…}).
var fuzzRE = regexp.MustCompile(`\$\{self((?:\.[A-Za-z0-9_-]+)*)\}`)

// FuzzResolve substitutes references in any arguments, looking them up in
// a stored result with Path. It never panics; errors are permanent and
// name the reference or the arguments; valid JSON gives JSON, and
// arguments with no ${ in any string are left as they are (the same JSON).
func FuzzResolve(f *testing.F) {
	for _, seed := range [][2]string{
		{`{"refund":"${self.body.id}"}`, `{"id":"c-42","items":[1,"two",null]}`},
		{`{"a":"${self}","b":["${self.status} and ${self.external_ref}"]}`, `{}`},
		{`{"x":"${self.body.items.1}","y":"${self.body.items.9}","z":"${self.nope}"}`, `{"items":[1,2]}`},
		{`{"x":"${self.body.id.deeper}"}`, `{"id":7}`},
		{`{"plain":"no reference","n":1.50,"e":1e3,"u":"\u00e9 <&>"}`, `null`},
		{`{"x":"\u0024{self.status}"}`, `[]`},
		{`{"a":1,"a":2}`, ``},
		{`{"a":`, `{`},
		{`"${self.body}"`, `"text"`},
	} {
		f.Add([]byte(seed[0]), []byte(seed[1]))
	}
	f.Fuzz(func(t *testing.T, args, resultBody []byte) {
		self, err := View(ledger.Result{Status: 200, Body: resultBody, ExternalRef: "ch_1"})
		if err != nil {
			if json.Valid(resultBody) && len(bytes.TrimSpace(resultBody)) > 0 {
				t.Fatalf("View of JSON %q: %v", resultBody, err)
			}
			return
		}
		out, err := Resolve(args, fuzzRE, func(m []string) (any, error) {
			return Path(m[0], "the undone effect's", self, m[1])
		})
		if err != nil {
			var perm *agentledger.PermanentError
			if !errors.As(err, &perm) || !(strings.HasPrefix(err.Error(), "args: ") || strings.HasPrefix(err.Error(), "${self")) {
				t.Fatalf("Resolve(%q): error %q (%T), want a permanent one naming the reference or the args", args, err, err)
			}
			if json.Valid(args) && strings.HasPrefix(err.Error(), "args: ") {
				t.Fatalf("Resolve(%q): valid JSON refused: %v", args, err)
			}
			return
		}
		if !json.Valid(out) {
			t.Fatalf("Resolve(%q) = %q, not JSON", args, out)
		}
		if !json.Valid(args) || hasRefStart(args) {
			return
		}
		in, err := canonjson.Marshal(args)
		if err != nil {
			return // duplicate keys: the decoder keeps the last
		}
		if got, err := canonjson.Marshal(out); err != nil || !bytes.Equal(got, in) {
			t.Fatalf("Resolve(%q) = %q, want the same JSON (%v)", args, out, err)
		}
	})
}

// FuzzSubstitute checks one string: no panic, and a string without ${ is
// itself.
func FuzzSubstitute(f *testing.F) {
	for _, s := range []string{"${self.status}", "id ${self.body.id}!", "plain", "$ {self}", "${self", "${self.}", "${self.body.a.b.c}"} {
		f.Add(s)
	}
	self := map[string]any{"status": json.Number("200"), "external_ref": "r", "body": map[string]any{"id": "c-42"}}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := substitute(s, fuzzRE, func(m []string) (any, error) {
			return Path(m[0], "the undone effect's", self, m[1])
		})
		if !strings.Contains(s, "${") && (err != nil || v != s) {
			t.Fatalf("substitute(%q) = %#v, %v; want it unchanged", s, v, err)
		}
	})
}

// hasRefStart reports whether a string of valid JSON args holds "${".
func hasRefStart(args []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(args))
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		if s, ok := tok.(string); ok && strings.Contains(s, "${") {
			return true
		}
	}
}
