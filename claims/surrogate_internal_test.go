package claims

import "testing"

// jsonb refuses a lone surrogate escape; a pair, a plain escape and text
// that only looks like an escape pass.
func TestLoneSurrogate(t *testing.T) {
	for raw, want := range map[string]bool{
		`{"a":"\ud800"}`:          true,
		`{"a":"\uDC00"}`:          true,
		`{"a":"\ud800x"}`:         true,
		`{"a":"\ud800\u0041"}`:    true,
		`{"a":"\ud83d\ude00"}`:    false,
		`{"a":"\\ud800"}`:         false,
		`{"a":"\u00e9 \n \""}`:    false,
		`{"\ud800":1}`:            true,
		`{"a":"ok","b":"\udfff"}`: true,
		`{"a":1}`:                 false,
	} {
		if got := loneSurrogate([]byte(raw)); got != want {
			t.Errorf("loneSurrogate(%s) = %v, want %v", raw, got, want)
		}
	}
}
