package slackfake

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slack-go/slack/slacktest"
)

// Server is a running fake Slack. Its methods are safe for concurrent use.
type Server struct {
	token  string
	srv    *slacktest.Server
	client *http.Client

	mu       sync.Mutex
	channels []*channel // in creation order
	calls    map[string]int
	forms    map[string][]url.Values
	count    bool // CountOnly: calls' forms are counted, not kept
	faults   map[string][]Fault
	arrivals map[string][]time.Time // channel → posts and updates received
	lastTS   int64                  // microseconds of the last ts handed out
	skew     time.Duration          // of the server's clock from the real one
	groups   map[string][]string    // user group → its users
}

// channel is one conversation and its messages, oldest first.
type channel struct {
	id, name string
	archived bool
	member   bool
	messages []*Message
	byTS     map[string]*Message // the same messages by ts: chat.update finds its own without a scan
}

// add stores m as the channel's newest message.
func (c *channel) add(m *Message) {
	if c.byTS == nil {
		c.byTS = map[string]*Message{}
	}
	c.messages = append(c.messages, m)
	c.byTS[m.TS] = m
}

// Message is one stored message.
type Message struct {
	// Channel is the channel's ID.
	Channel string
	// TS is the message's timestamp, unique on the server.
	TS string
	// Text is the message's text as received.
	Text string
	// Blocks is the Block Kit JSON as received, nil without blocks.
	Blocks json.RawMessage
	// Metadata is the message metadata, nil without.
	Metadata *Metadata
	// Updates counts the chat.update calls that changed the message.
	Updates int
}

// Metadata is Slack message metadata.
type Metadata struct {
	EventType    string         `json:"event_type"`
	EventPayload map[string]any `json:"event_payload"`
}

// New starts a server that accepts token and knows no channels yet; it is
// closed when t ends.
func New(t testing.TB, token string) *Server {
	s, stop := Start(token)
	t.Cleanup(stop)
	return s
}

// Start starts a server outside a test (a benchmark stands in for Slack
// with it) that accepts token and knows no channels yet; stop closes it.
func Start(token string) (s *Server, stop func()) {
	s = &Server{token: token, calls: map[string]int{}, forms: map[string][]url.Values{}, faults: map[string][]Fault{},
		arrivals: map[string][]time.Time{}}
	// slacktest serves the rest of the Web API; the methods it lacks, or
	// serves without metadata, unique ts values or faults, are ours.
	s.srv = slacktest.NewTestServer(func(c slacktest.Customize) {
		for method := range handlers {
			c.Handle("/"+method, s.serve)
		}
	})
	s.srv.Start()
	tr := &http.Transport{}
	s.client = &http.Client{Transport: tr}
	return s, func() {
		tr.CloseIdleConnections()
		s.srv.Stop()
	}
}

// APIURL is the Web API root to configure a client with, as
// slack.OptionAPIURL wants it.
func (s *Server) APIURL() string { return s.srv.GetAPIURL() }

// Client returns an HTTP client whose connections close with the server.
func (s *Server) Client() *http.Client { return s.client }

// AddChannel creates a public channel named name (without "#"), with the
// app as a member, and returns its ID.
func (s *Server) AddChannel(name string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := &channel{id: fmt.Sprintf("C%08d", len(s.channels)+1), name: strings.TrimPrefix(name, "#"), member: true}
	s.channels = append(s.channels, c)
	return c.id
}

// Kick removes the app from the channel (by name or ID): posts answer
// not_in_channel.
func (s *Server) Kick(ch string) { s.setChannel(ch, func(c *channel) { c.member = false }) }

// Archive archives the channel (by name or ID): posts answer is_archived.
func (s *Server) Archive(ch string) { s.setChannel(ch, func(c *channel) { c.archived = true }) }

func (s *Server) setChannel(ch string, f func(*channel)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c := s.lookup(ch, true); c != nil {
		f(c)
	}
}

// Calls is the number of calls of the Web API method (e.g.
// "chat.postMessage") received, answered or not.
func (s *Server) Calls(method string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[method]
}

// CountOnly makes the server count the Web API calls it receives from
// now on without keeping their arguments: a long run's hundreds of
// thousands of posts and updates would otherwise keep every form. Its
// messages and their arrivals are kept still; Forms lists only the calls
// kept before.
func (s *Server) CountOnly() {
	s.mu.Lock()
	s.count = true
	s.mu.Unlock()
}

// Forms returns the arguments of every call of the Web API method
// received (before CountOnly, if it was called), oldest first, without the
// token.
func (s *Server) Forms(method string) []url.Values {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]url.Values, len(s.forms[method]))
	for i, f := range s.forms[method] {
		out[i] = maps.Clone(f)
	}
	return out
}

// Messages returns copies of the messages of the channel (by name or ID),
// oldest first; nil for an unknown channel.
func (s *Server) Messages(ch string) []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.lookup(ch, true)
	if c == nil {
		return nil
	}
	out := make([]Message, len(c.messages))
	for i, m := range c.messages {
		out[i] = *m
	}
	return out
}

// Seed stores a message in the channel (by name or ID) as if someone had
// posted it, and returns its ts; md may be nil.
func (s *Server) Seed(ch, text string, md *Metadata) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.lookup(ch, true)
	if c == nil {
		panic("slackfake: Seed into unknown channel " + ch)
	}
	m := &Message{Channel: c.id, TS: s.nextTS(), Text: text, Metadata: md}
	c.add(m)
	return m.TS
}

// lookup finds a channel by ID, or also by name ("ops" or "#ops") when
// byName; it needs s.mu.
func (s *Server) lookup(ch string, byName bool) *channel {
	for _, c := range s.channels {
		if c.id == ch || byName && (c.name == ch || "#"+c.name == ch) {
			return c
		}
	}
	return nil
}

// Skew sets the server's clock d off the real one (negative: behind, as
// a Slack whose clock is slow): the ts of new messages and the Date header
// of answers follow it. A ts is still later than every one before.
func (s *Server) Skew(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.skew = d
}

// now is the server's clock; it needs s.mu.
func (s *Server) now() time.Time { return time.Now().Add(s.skew) }

// Backfill stores n messages from others in the channel (by name or ID),
// their ts evenly spread over the span before the server's now: the recent
// history of a busy channel. The channel must be empty.
func (s *Server) Backfill(ch string, n int, span time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.lookup(ch, true)
	if c == nil || len(c.messages) > 0 {
		panic("slackfake: Backfill needs an empty, known channel: " + ch)
	}
	end := s.now().UnixMicro()
	step := span.Microseconds() / int64(max(n, 1))
	for i := range n {
		us := max(end-int64(n-i)*step, s.lastTS+1)
		s.lastTS = us
		c.add(&Message{Channel: c.id, TS: formatTS(us), Text: fmt.Sprintf("chatter %d", i)})
	}
}

// nextTS returns a ts later than every one before; it needs s.mu.
func (s *Server) nextTS() string {
	us := max(s.now().UnixMicro(), s.lastTS+1)
	s.lastTS = us
	return formatTS(us)
}

func formatTS(us int64) string { return fmt.Sprintf("%d.%06d", us/1e6, us%1e6) }
