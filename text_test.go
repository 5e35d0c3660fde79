package agentledger

import (
	"encoding/json"
	"testing"
	"time"
)

func TestSafeText(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"ok":           "ok",
		"nul\x00here":  "nul\uFFFDhere",
		"bad\xffutf8":  "bad\uFFFDutf8",
		"é and \u2028": "é and \u2028",
	} {
		if got := SafeText(in); got != want {
			t.Errorf("SafeText(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestSafeJSON(t *testing.T) {
	t.Parallel()
	clean := json.RawMessage(`{"a": 1.50, "b": "x"}`)
	if got := SafeJSON(clean); string(got) != string(clean) {
		t.Errorf("clean JSON changed: %s", got)
	}
	got := SafeJSON(json.RawMessage(`{"bin":"a\u0000b","k\u0000":[1,"\u0000"],"n":1.50}`))
	if string(got) != `{"bin":"a`+"\uFFFD"+`b","k`+"\uFFFD"+`":[1,"`+"\uFFFD"+`"],"n":1.50}` {
		t.Errorf("got %s", got)
	}
}

func TestDurationText(t *testing.T) {
	for d, want := range map[time.Duration]string{
		90 * 24 * time.Hour: "2160h", 90 * time.Minute: "1h30m", 45 * time.Second: "45s", 0: "0s",
		time.Hour + time.Second: "1h0m1s", 1500 * time.Millisecond: "1.5s", 2 * time.Minute: "2m",
	} {
		if got := DurationText(d); got != want {
			t.Errorf("DurationText(%v) = %q, want %q", d, got, want)
		}
	}
}
