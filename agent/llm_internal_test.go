package agent

import (
	"fmt"
	"net/http"
	"testing"
	"time"
)

func TestParseRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for v, want := range map[string]time.Duration{
		"":         0,
		"3":        3 * time.Second,
		" 10 ":     10 * time.Second,
		"0":        0,
		"-1":       0,
		"soon":     0,
		"99999999": 24 * time.Hour,
		now.Add(7 * time.Second).Format(http.TimeFormat):  7 * time.Second,
		now.Add(-7 * time.Second).Format(http.TimeFormat): 0,
	} {
		if got := parseRetryAfter(v, now); got != want {
			t.Errorf("parseRetryAfter(%q) = %s, want %s", v, got, want)
		}
	}
}

func TestBackoffDoublesWithinBounds(t *testing.T) {
	t.Parallel()
	base := 500 * time.Millisecond
	for try, full := range []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, maxBackoff, maxBackoff} {
		for range 50 {
			if d := backoff(base, try); d < full/2 || d > full {
				t.Fatalf("backoff(try %d) = %s, want within [%s, %s]", try, d, full/2, full)
			}
		}
	}
}

func TestNormalizeToolCalls(t *testing.T) {
	t.Parallel()
	long := string(make([]byte, maxToolCallID+1))
	m := message{ToolCalls: []toolCall{{ID: "a"}, {ID: ""}, {ID: "a"}, {ID: long}, {ID: "call_5"}, {ID: ""}}}
	normalizeToolCalls(&m)
	want := []string{"a", "call_1", "call_2", "call_3", "call_5", "call_5_"}
	for i, c := range m.ToolCalls {
		if c.ID != want[i] {
			t.Fatalf("ids %+v, want %v", m.ToolCalls, want)
		}
	}
}

func TestTransientStatus(t *testing.T) {
	t.Parallel()
	for code, want := range map[int]bool{400: false, 401: false, 403: false, 404: false, 408: true, 422: false,
		429: true, 500: true, 502: true, 503: true, 504: true} {
		if transientStatus(code) != want {
			t.Errorf("transientStatus(%d) = %v", code, !want)
		}
	}
}

func TestRetryAfterOf(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		status int
		header map[string]string
		want   time.Duration
	}{
		{429, nil, 0},
		{429, map[string]string{"Retry-After": "3"}, 3 * time.Second},
		{429, map[string]string{"Retry-After": "3", "retry-after-ms": "1500"}, 1500 * time.Millisecond},
		{429, map[string]string{"retry-after-ms": "soon", "Retry-After": "2"}, 2 * time.Second},
		{429, map[string]string{"retry-after-ms": "999999999999"}, 24 * time.Hour},
		{429, map[string]string{"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "6m0s"}, 6 * time.Minute},
		{429, map[string]string{"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "20ms",
			"x-ratelimit-remaining-tokens": "0", "x-ratelimit-reset-tokens": "1.5"}, 1500 * time.Millisecond},
		{429, map[string]string{"x-ratelimit-remaining-requests": "1", "x-ratelimit-reset-requests": "6m0s"}, 0},
		{429, map[string]string{"x-ratelimit-remaining-tokens": "0", "x-ratelimit-reset-tokens": "NaN"}, 0},
		{429, map[string]string{"x-ratelimit-remaining-tokens": "0", "x-ratelimit-reset-tokens": "-1"}, 0},
		{429, map[string]string{"x-ratelimit-remaining-tokens": "0", "x-ratelimit-reset-tokens": "999999999"}, 24 * time.Hour},
		// LiteLLM's reset is a Unix time.
		{429, map[string]string{"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": fmt.Sprint(now.Unix() + 42)}, 42 * time.Second},
		{429, map[string]string{"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": fmt.Sprint(now.Unix() - 42)}, 0},
		// Only a 429 waits for a limit's reset.
		{503, map[string]string{"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "6m0s"}, 0},
		{503, map[string]string{"Retry-After": "4"}, 4 * time.Second},
	} {
		h := http.Header{}
		for k, v := range tc.header {
			h.Set(k, v)
		}
		if got := retryAfterOf(tc.status, h, now); got != tc.want {
			t.Errorf("retryAfterOf(%d, %v) = %s, want %s", tc.status, tc.header, got, tc.want)
		}
	}
}
