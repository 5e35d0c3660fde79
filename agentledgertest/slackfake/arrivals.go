package slackfake

import (
	"net/url"
	"slices"
	"time"
)

// pacedMethods are the calls Slack paces per channel: their arrivals are
// recorded.
var pacedMethods = map[string]bool{"chat.postMessage": true, "chat.update": true}

// arrive records that a paced call to the form's channel arrived at at,
// under the channel's ID when the channel is known; it needs s.mu.
func (s *Server) arrive(method string, form url.Values, at time.Time) {
	if !pacedMethods[method] {
		return
	}
	ch := form.Get("channel")
	if c := s.lookup(ch, true); c != nil {
		ch = c.id
	}
	s.arrivals[ch] = append(s.arrivals[ch], at)
}

// Arrivals returns when each chat.postMessage and chat.update call to the
// channel (by name or ID) arrived, answered or not, in order: what Slack's
// per-channel rate limit sees.
func (s *Server) Arrivals(ch string) []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c := s.lookup(ch, true); c != nil {
		ch = c.id
	}
	out := slices.Clone(s.arrivals[ch])
	slices.SortFunc(out, time.Time.Compare)
	return out
}

// MaxPerWindow returns, for every channel that received posts or updates
// (by ID; a channel the fake does not know, as addressed), the most that
// arrived within any window of the given length: half open, so two calls
// exactly window apart are in different windows.
func (s *Server) MaxPerWindow(window time.Duration) map[string]int {
	s.mu.Lock()
	chans := make([]string, 0, len(s.arrivals))
	for ch := range s.arrivals {
		chans = append(chans, ch)
	}
	s.mu.Unlock()
	out := make(map[string]int, len(chans))
	for _, ch := range chans {
		out[ch] = MaxInWindow(s.Arrivals(ch), window)
	}
	return out
}

// MaxInWindow returns the most of times (in order) that fall within any
// half-open window [t, t+window).
func MaxInWindow(times []time.Time, window time.Duration) int {
	most := 0
	first := 0
	for last, t := range times {
		for t.Sub(times[first]) >= window {
			first++
		}
		most = max(most, last-first+1)
	}
	return most
}
