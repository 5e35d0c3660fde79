package steps

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/canonjson"
)

// payloadSeeds are the payloads of the package's tests, good and bad.
var payloadSeeds = []string{
	`{}`, `{"steps":null}`, `"x"`, `{"steps":{"tool":"post"}}`, `{"steps":["post"]}`, `{"steps":[`,
	`{"steps":[{"args":{}}]}`, `{"steps":[{"tool":7}]}`, `{"steps":[{"tool":"post"}],"x":1}`,
	`{"steps":[{"tool":"post","argz":{}}]}`, `{"steps":[{"tool":"post","args":"x"}]}`,
	`{"steps":[{"tool":"post","args":["${steps.0.body}"]}]}`, `{"steps":[{"tool":"nope"}]}`,
	`{"steps":[{"tool":"post","args":{"a":"${steps.0.body}"}}]}`,
	`{"steps":[{"tool":"post"},{"tool":"post","args":{"a":"${steps.0.headers}"}}]}`,
	`{"steps":[{"tool":"post"}]}`, `{"steps": [{"tool": "http_request", "args": {}}]}`,
	`{"steps":[{"tool":"post","args":{"n":0}},{"tool":"post","args":{"n":1,"prev":"${steps.0.body.id}"}}]}`,
	`{"steps":[{"tool":"post","args":{"charge":42},"compensate":{"tool":"post","args":{"refund":"${self.body.id}"}}}]}`,
	`{"steps":[{"tool":"http_request","args":{"id":"${self.body.id}"}}]}`,
	`{"steps":[{"tool":"http_request","args":{"method":"POST","url":"http://a/x"},"compensate":{"tool":"http_request","args":{"id":"${steps.1.body.id}"}}},{"tool":"http_request"}]}`,
	`{"steps":[{"tool":"http_request","compensate":{"tool":"http_request","args":{"x":"${self.nope}"}}}]}`,
	`{"steps":[{"tool":"a"},{"tool":"b","args":{"x":"id ${steps.0.body.items.1} of ${steps.0.external_ref}","y":["${steps.0.status}"]}}]}`,
	`{"steps":[{"tool":"a"},{"tool":"b","args":{"x":"${steps.0.body.nope}","y":"${steps.0.body.items.9}"}}]}`,
	`{"steps":[{"tool":"a","args":{"x":"\u0024{steps.0.status}"}}]}`,
}

// fuzzResult is what the fuzz target's steps return: a view as refs.View
// makes it.
func fuzzResult() any {
	return map[string]any{"status": json.Number("200"), "external_ref": "ch_1",
		"body": map[string]any{"id": "c-42", "items": []any{json.Number("1"), "two", nil}}}
}

// FuzzPayload parses any payload and, when it parses, runs its references
// as Work would, each step seeing the results of the steps before it. It
// never panics; every error is a permanent one saying "steps: …"; Check
// agrees with the parse; arguments with no reference are passed on as
// written (the same JSON), and resolved ones are JSON.
func FuzzPayload(f *testing.F) {
	for _, p := range payloadSeeds {
		f.Add([]byte(p))
	}
	f.Fuzz(func(t *testing.T, payload []byte) {
		p, err := parse(payload)
		cerr := Check(payload, nil)
		if (err == nil) != (cerr == nil) && len(payload) > 0 {
			t.Fatalf("%q: parse says %v, Check says %v", payload, err, cerr)
		}
		if err != nil {
			wantPermanent(t, payload, err)
			return
		}
		results := make([]any, 0, len(p.Steps))
		for i, s := range p.Steps {
			args, err := resolve(s.Args, results)
			switch {
			case err != nil:
				wantPermanent(t, payload, err)
			case !json.Valid(args):
				t.Fatalf("%q: step %d resolved to %q, not JSON", payload, i, args)
			case !references(s.Args):
				// (Duplicate keys aside: payloads come from jsonb, which keeps one.)
				a, err := canonjson.Marshal(s.Args)
				if b := canon(t, args); err == nil && !bytes.Equal(a, b) {
					t.Fatalf("%q: step %d has no reference, but its args %s became %s", payload, i, a, b)
				}
			}
			if _, err := compensation(s, results); err != nil {
				wantPermanent(t, payload, err)
			}
			results = append(results, fuzzResult())
		}
	})
}

// wantPermanent checks err is a permanent error saying where it comes from.
func wantPermanent(t *testing.T, payload []byte, err error) {
	t.Helper()
	var perm *agentledger.PermanentError
	msg := err.Error()
	if !errors.As(err, &perm) || !strings.Contains(msg, "steps: ") || len(msg) <= len("steps: ") {
		t.Fatalf("%q: error %q (%T), want a permanent steps: error", payload, msg, err)
	}
}

func canon(t *testing.T, raw json.RawMessage) []byte {
	t.Helper()
	c, err := canonjson.Marshal(raw)
	if err != nil {
		t.Fatalf("args %q: %v", raw, err)
	}
	return c
}
