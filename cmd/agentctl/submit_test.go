package main

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentledger/agentledger"
)

func TestParseRunAt(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		in   string
		want time.Time
		bad  bool
	}{
		{in: "", want: time.Time{}},
		{in: "+5m", want: now.Add(5 * time.Minute)},
		{in: "+1h30m", want: now.Add(90 * time.Minute)},
		{in: "+0s", want: now},
		{in: "2026-03-04T05:06:07Z", want: time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)},
		{in: "2026-03-04T05:06:07.5+02:00", want: time.Date(2026, 3, 4, 3, 6, 7, 5e8, time.UTC)},
		{in: "+-5m", bad: true},
		{in: "-5m", bad: true},
		{in: "5m", bad: true},
		{in: "+", bad: true},
		{in: "+5 minutes", bad: true},
		{in: "tomorrow", bad: true},
		{in: "2026-03-04", bad: true},
		{in: "2026-03-04 05:06:07", bad: true},
	} {
		got, err := parseRunAt(tc.in, now)
		switch {
		case tc.bad && !errors.Is(err, agentledger.ErrInvalid):
			t.Errorf("parseRunAt(%q) = %v, %v; want an invalid-input error", tc.in, got, err)
		case tc.bad && !strings.Contains(err.Error(), "--run-at"):
			t.Errorf("parseRunAt(%q): error %q does not name --run-at", tc.in, err)
		case !tc.bad && (err != nil || !got.Equal(tc.want)):
			t.Errorf("parseRunAt(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

func TestReadPayload(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		spec, stdin string
		want        string // payload, or the error when bad
		bad         bool
	}{
		{spec: "", want: ""},
		{spec: `{"a":1}`, want: `{"a":1}`},
		{spec: `[1, "x", null]`, want: `[1, "x", null]`},
		{spec: `"just a string"`, want: `"just a string"`},
		{spec: "-", stdin: `{"b":2}`, want: `{"b":2}`},
		{spec: `{"a": 1,}`, bad: true, want: "--payload: invalid JSON at offset 9: invalid character '}' looking for beginning of object key string"},
		{spec: `{"a": 1} {"b": 2}`, bad: true, want: "--payload: invalid JSON at offset 10: invalid character '{' after top-level value"},
		{spec: `{"a":`, bad: true, want: "--payload: invalid JSON at offset 5: unexpected end of JSON input"},
		{spec: "-", stdin: "", bad: true, want: "--payload (standard input): invalid JSON at offset 0: unexpected end of JSON input"},
		{spec: "@testdata/does-not-exist.json", bad: true, want: "--payload: open testdata/does-not-exist.json: no such file or directory"},
	} {
		got, err := readPayload(tc.spec, strings.NewReader(tc.stdin))
		switch {
		case tc.bad && (!errors.Is(err, agentledger.ErrInvalid) || err.Error() != tc.want):
			t.Errorf("readPayload(%q) error = %v; want %q", tc.spec, err, tc.want)
		case !tc.bad && (err != nil || string(got) != tc.want):
			t.Errorf("readPayload(%q) = %s, %v; want %s", tc.spec, got, err, tc.want)
		}
	}
}

func TestSubmitParamsNameTheFlag(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		f    submitFlags
		want string
	}{
		{submitFlags{kind: "a b"}, "--kind: "},
		{submitFlags{kind: "k", queue: "q/1"}, "--queue: "},
		{submitFlags{kind: "k", tenant: "t t"}, "--tenant: "},
		{submitFlags{kind: "k", priority: 101}, "--priority: 101 is outside 0..100"},
		{submitFlags{kind: "k", maxAttempts: -1}, "--max-attempts: -1 is outside 1..1000"},
		{submitFlags{kind: "k", key: "caf\u00e9"}, "--idempotency-key: must be 1-255 printable ASCII characters"},
		{submitFlags{kind: "k", payload: payloadSpec(`"` + strings.Repeat("x", 1<<20) + `"`)}, "--payload: is 1048578 bytes; at most 1048576 (1 MiB)"},
		{submitFlags{kind: "k", payloadJSON: []byte(`"` + strings.Repeat("x", 1<<20) + `"`), fileLabel: "task.json"},
			"payload (task.json): is 1048578 bytes; at most"},
	} {
		_, err := tc.f.params(strings.NewReader(""), time.Now())
		if !errors.Is(err, agentledger.ErrInvalid) || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("params(%.200v) error = %.200v; want one starting %q", tc.f, err, tc.want)
		}
	}
}
