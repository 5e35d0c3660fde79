package httpapi

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/agentledger/agentledger"
)

// A request's top-level keys name its fields exactly and once: encoding/json
// would take a key that differs in case (or by a Unicode fold, such as the
// Kelvin sign for K) as the field, and the last of several, so an object's
// answer would depend on the order of its keys.
func TestFieldsAreNamedExactlyAndOnce(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		body, field string // field: the one refused, "" when accepted
	}{
		{`{"kind":"echo"}`, ""},
		{`{"kind":"echo","payload":{"Kind":1,"kind":2,"kind":3}}`, ""}, // a payload is the kind's, not the request's
		{`{"Kind":"echo"}`, "Kind"},
		{`{"kind":"","kiNd":"b"}`, "kiNd"},
		{`{"kiNd":"b","kind":""}`, "kiNd"},
		{`{"kind":"echo","RUN_AT":"2030-01-01T00:00:00Z"}`, "RUN_AT"},
		{"{\"\u212aind\":\"echo\"}", "\u212aind"},
		{`{"kind":"a","kind":"b"}`, "kind"},
		{`{"kind":"echo","unknown":1}`, "unknown"},
	} {
		var req CreateTaskRequest
		err := decodeBody([]byte(c.body), &req)
		var inv *agentledger.InvalidError
		switch {
		case c.field == "" && err != nil:
			t.Errorf("%s: refused: %v", c.body, err)
		case c.field != "" && (!errors.As(err, &inv) || inv.Field != c.field):
			t.Errorf("%s: %v, want %s refused", c.body, err, c.field)
		}
	}
}

// badEscape finds what no text column takes as sent, and passes a pair, an
// escaped backslash before "u0000", and values that are no string.
func TestBadEscape(t *testing.T) {
	for value, bad := range map[string]bool{
		`"a\u0000b"`: true, `"\ud800"`: true, `"x\udc00y"`: true, `"\ud83d x"`: true, `"\ud83d\u0041"`: true,
		`"\ud83d\ude00"`: false, `"\\u0000"`: false, `"plain"`: false, `{"a":"\u0000"}`: false, `12`: false, `"\""`: false,
	} {
		if got := badEscape(json.RawMessage(value)) != ""; got != bad {
			t.Errorf("%s: bad %v, want %v", value, got, bad)
		}
	}
}
