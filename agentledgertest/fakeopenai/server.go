package fakeopenai

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// Path is the one route the server answers.
const Path = "/v1/chat/completions"

// Server is a running fake. Its methods are safe for concurrent use.
type Server struct {
	t      reporter
	key    string
	srv    *httptest.Server
	mu     sync.Mutex
	script []Reply
	next   int
	reqs   []Request
	calls  int  // requests received, kept or not
	count  bool // CountOnly: requests are counted, not kept
	// respond, when set, answers every request instead of the script.
	respond func(Request) Reply
}

// Request is one request the server received.
type Request struct {
	// Authorization is the header as received.
	Authorization string
	// Authorized reports whether it was "Bearer <key>".
	Authorized bool
	// TraceParent is the W3C traceparent header as received.
	TraceParent string
	// Body is the raw request body.
	Body []byte
	// Model, Messages, Tools, MaxTokens (max_tokens, 0 when absent) and
	// MaxCompletionTokens (max_completion_tokens, the reasoning models'
	// name for it) are the body decoded.
	Model               string
	Messages            []Message
	Tools               []Tool
	MaxTokens           int
	MaxCompletionTokens int
}

// Message is one chat message of a request.
type Message struct {
	Role       string     `json:"role"`
	Content    string     `json:"content"`
	ToolCallID string     `json:"tool_call_id"`
	ToolCalls  []ToolCall `json:"tool_calls"`
}

// Tool is one tool offered in a request.
type Tool struct {
	Type     string `json:"type"`
	Function struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
	} `json:"function"`
}

// reporter is where a script's misuse is reported: a test, or nothing.
type reporter interface {
	Errorf(format string, args ...any)
}

type noReporter struct{}

func (noReporter) Errorf(string, ...any) {}

// Start starts a server outside a test (an example program stands in for
// a model with it) that answers every request with respond(req); stop
// closes it.
func Start(key string, respond func(Request) Reply) (s *Server, stop func()) {
	s = &Server{t: noReporter{}, key: key, respond: respond}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	return s, s.srv.Close
}

// New starts a server that expects the bearer key and answers with
// replies in order; it is closed when t ends. A request past the end of the
// script fails t and is answered 400.
func New(t testing.TB, key string, replies ...Reply) *Server {
	s := &Server{t: t, key: key, script: replies}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	return s
}

// NewFunc starts a server that answers every request with respond(req):
// for concurrent conversations, whose requests arrive in no fixed order.
func NewFunc(t testing.TB, key string, respond func(Request) Reply) *Server {
	s := &Server{t: t, key: key, respond: respond}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	return s
}

// BaseURL is the API root to configure a client with (".../v1").
func (s *Server) BaseURL() string { return s.srv.URL + "/v1" }

// Client returns an HTTP client whose connections close with the server.
func (s *Server) Client() *http.Client { return s.srv.Client() }

// Add appends replies to the script.
func (s *Server) Add(replies ...Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.script = append(s.script, replies...)
}

// CountOnly makes the server count the requests it receives from now on
// without keeping them: a run of hundreds of thousands of conversations
// would otherwise keep every body. Requests lists only those kept before.
func (s *Server) CountOnly() {
	s.mu.Lock()
	s.count = true
	s.mu.Unlock()
}

// Calls is the number of requests received, authorized or not.
func (s *Server) Calls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

// Requests returns the requests kept so far (all of them, unless
// CountOnly was called), in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.reqs...)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != Path {
		writeError(w, http.StatusNotFound, fmt.Sprintf("fakeopenai: no route %s %s", r.Method, r.URL.Path), "")
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error(), "")
		return
	}
	req := Request{Authorization: r.Header.Get("Authorization"), Body: body, TraceParent: r.Header.Get("traceparent")}
	req.Authorized = req.Authorization == "Bearer "+s.key
	var wire struct {
		Model     string    `json:"model"`
		Messages  []Message `json:"messages"`
		Tools     []Tool    `json:"tools"`
		MaxTokens int       `json:"max_tokens"`
		MaxCompl  int       `json:"max_completion_tokens"`
	}
	decodeErr := json.Unmarshal(body, &wire)
	req.Model, req.Messages, req.Tools, req.MaxTokens = wire.Model, wire.Messages, wire.Tools, wire.MaxTokens
	req.MaxCompletionTokens = wire.MaxCompl

	s.mu.Lock()
	s.calls++
	n := s.calls
	if !s.count {
		s.reqs = append(s.reqs, req)
	}
	var reply Reply
	have := false
	respond := s.respond
	if req.Authorized && decodeErr == nil && respond == nil && s.next < len(s.script) {
		reply, have = s.script[s.next], true
		s.next++
	}
	s.mu.Unlock()
	if req.Authorized && decodeErr == nil && respond != nil {
		reply, have = respond(req), true
	}

	switch {
	case !req.Authorized:
		writeError(w, http.StatusUnauthorized, "fakeopenai: missing or wrong bearer key", "invalid_request_error")
		return
	case decodeErr != nil:
		writeError(w, http.StatusBadRequest, "fakeopenai: body is not a chat request: "+decodeErr.Error(), "invalid_request_error")
		return
	case !have:
		s.t.Errorf("fakeopenai: request %d has no scripted reply (model called more often than expected)", n)
		writeError(w, http.StatusBadRequest, fmt.Sprintf("fakeopenai: no scripted reply left for request %d", n), "")
		return
	}
	if reply.Delay > 0 {
		timer := time.NewTimer(reply.Delay)
		select {
		case <-timer.C:
		case <-r.Context().Done():
			timer.Stop()
			return
		}
	}
	if reply.RetryAfter != "" {
		w.Header().Set("Retry-After", reply.RetryAfter)
	}
	if reply.Status != 0 && reply.Status != http.StatusOK {
		msg := reply.Message
		if msg == "" {
			msg = http.StatusText(reply.Status)
		}
		if reply.EchoAuth {
			msg += " (you sent " + req.Authorization + ")"
		}
		writeError(w, reply.Status, msg, "fake_error")
		return
	}
	limit := wire.MaxTokens
	if limit == 0 {
		limit = wire.MaxCompl
	}
	writeJSON(w, http.StatusOK, completion(n, wire.Model, limit, reply))
}
