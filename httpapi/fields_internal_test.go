package httpapi

import (
	"encoding/json"
	"testing"
)

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
