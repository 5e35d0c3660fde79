package slack

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// clockStale is how old the last reading of Slack's clock may be when
// Find relies on it; an older one is read again (auth.test).
const clockStale = 10 * time.Minute

// slackClock is what the sink knows of Slack's clock, which stamps every
// message (its ts) and may run far from ours. Each answer tells it: a
// post's ts to the microsecond, every answer's Date header to the second.
// The sink keeps, from the newest answer, a lower bound of how far
// Slack's clock is ahead of ours (negative: behind), so that Find can
// start reading the history where Slack's clock stood when a post was
// intended, not where ours did. It is safe for concurrent use.
type slackClock struct {
	mu     sync.Mutex
	offset time.Duration // Slack's clock minus ours, at least
	at     time.Time     // our time of the reading; zero: none yet
}

// observe records that Slack's clock read at least slack when we had an
// answer at received (our clock).
func (c *slackClock) observe(slack, received time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.offset, c.at = slack.Sub(received), received
}

// read returns the offset, and whether a reading newer than clockStale
// exists.
func (c *slackClock) read(now time.Time) (time.Duration, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.offset, !c.at.IsZero() && now.Sub(c.at) < clockStale
}

// clockTransport reads Slack's clock from the Date header of every answer.
type clockTransport struct {
	base  http.RoundTripper
	clock *slackClock
}

func (t *clockTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if err == nil {
		if d, perr := http.ParseTime(resp.Header.Get("Date")); perr == nil {
			t.clock.observe(d, time.Now()) // Date is truncated to the second: a lower bound
		}
	}
	return resp, err
}

// withClock returns a copy of hc whose answers set clock.
func withClock(hc *http.Client, clock *slackClock) *http.Client {
	return wrapTransport(hc, func(base http.RoundTripper) http.RoundTripper {
		return &clockTransport{base: base, clock: clock}
	})
}

// wrapTransport returns a copy of hc whose transport is wrap of hc's (the
// default transport when it has none).
func wrapTransport(hc *http.Client, wrap func(http.RoundTripper) http.RoundTripper) *http.Client {
	c := *hc
	base := hc.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	c.Transport = wrap(base)
	return &c
}

// slackOffset returns how far Slack's clock is ahead of ours (negative:
// behind), reading it with auth.test when no answer told it lately.
func (s *Sink) slackOffset(ctx context.Context) (time.Duration, error) {
	if off, ok := s.clock.read(time.Now()); ok {
		return off, nil
	}
	if _, err := s.Check(ctx); err != nil {
		return 0, err
	}
	off, _ := s.clock.read(time.Now())
	return off, nil
}

// parseTS reads a Slack ts ("1700000000.000100") as a time.
func parseTS(ts string) (time.Time, bool) {
	sec, frac, _ := strings.Cut(ts, ".")
	s, err := strconv.ParseInt(sec, 10, 64)
	if err != nil || len(frac) > 6 {
		return time.Time{}, false
	}
	var us int64
	if frac != "" {
		if us, err = strconv.ParseInt(frac+strings.Repeat("0", 6-len(frac)), 10, 64); err != nil {
			return time.Time{}, false
		}
	}
	return time.Unix(s, us*1000), true
}

// formatTS writes t as a Slack ts.
func formatTS(t time.Time) string {
	us := t.UnixMicro()
	return strconv.FormatInt(us/1e6, 10) + "." + leftPad(strconv.FormatInt(us%1e6, 10), 6)
}

func leftPad(s string, n int) string { return strings.Repeat("0", max(n-len(s), 0)) + s }
