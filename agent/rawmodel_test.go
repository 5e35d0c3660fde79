package agent_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/agentledger/agentledger/agent"
)

// canned is one answer of a model endpoint as the server sends it: a
// status, headers, and a raw body from testdata/responses, named after the
// server and the shape it imitates.
type canned struct {
	status int
	header map[string]string
	file   string
}

// ok is a 200 answer with the body of file.
func ok(file string) canned { return canned{status: http.StatusOK, file: file} }

// rawRequest is one request a rawModel received.
type rawRequest struct {
	at     time.Time
	path   string
	query  string
	header http.Header
	body   struct {
		Model    string `json:"model"`
		Messages []struct {
			Role       string `json:"role"`
			Content    *string
			ToolCallID string `json:"tool_call_id"`
			ToolCalls  []struct {
				ID       string `json:"id"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"messages"`
		Tools []json.RawMessage `json:"tools"`
	}
}

// rawModel serves canned answers in order, byte for byte, to requests that
// carry the test key as a bearer token (or, with azure set, in an api-key
// header); a request past the script fails the test.
type rawModel struct {
	t      *testing.T
	srv    *httptest.Server
	azure  bool
	mu     sync.Mutex
	script []canned
	reqs   []rawRequest
}

func newRawModel(t *testing.T, script ...canned) *rawModel {
	m := &rawModel{t: t, script: script}
	m.srv = httptest.NewServer(http.HandlerFunc(m.serve))
	t.Cleanup(m.srv.Close)
	return m
}

// use points the agent of e at m.
func (m *rawModel) use(e *env, tweak func(*agent.Config)) {
	e.agent = agent.New(e.config(func(c *agent.Config) {
		c.BaseURL, c.HTTPClient = m.srv.URL+"/v1", m.srv.Client()
		if tweak != nil {
			tweak(c)
		}
	}), e.Ledger, e.reg)
}

func (m *rawModel) serve(w http.ResponseWriter, r *http.Request) {
	req := rawRequest{at: time.Now(), path: r.URL.Path, query: r.URL.RawQuery, header: r.Header.Clone()}
	raw, err := io.ReadAll(r.Body)
	if err == nil {
		err = json.Unmarshal(raw, &req.body)
	}
	if err != nil {
		m.t.Errorf("request %s: %v", r.URL, err)
	}
	authorized := r.Header.Get("Authorization") == "Bearer "+testKey
	if m.azure {
		authorized = r.Header.Get("api-key") == testKey && r.Header.Get("Authorization") == ""
	}
	m.mu.Lock()
	m.reqs = append(m.reqs, req)
	n := len(m.reqs)
	var c canned
	have := n <= len(m.script)
	if have {
		c = m.script[n-1]
	}
	m.mu.Unlock()
	switch {
	case !authorized:
		m.t.Errorf("request %d: not authorized by the test key: %v", n, r.Header)
		http.Error(w, `{"error":{"message":"bad key"}}`, http.StatusUnauthorized)
		return
	case !have:
		m.t.Errorf("request %d: the model was asked more often than scripted", n)
		http.Error(w, `{"error":{"message":"no reply scripted"}}`, http.StatusBadRequest)
		return
	}
	body, err := os.ReadFile(filepath.Join("testdata", "responses", c.file))
	if err != nil {
		m.t.Error(err)
	}
	if filepath.Ext(c.file) == ".json" {
		w.Header().Set("Content-Type", "application/json")
	} else {
		w.Header().Set("Content-Type", "text/html")
	}
	for k, v := range c.header {
		w.Header().Set(k, v)
	}
	w.WriteHeader(c.status)
	w.Write(body) //nolint:errcheck // the client's to notice
}

// add appends answers to the script.
func (m *rawModel) add(script ...canned) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.script = append(m.script, script...)
}

// requests returns the requests received so far.
func (m *rawModel) requests() []rawRequest {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]rawRequest(nil), m.reqs...)
}

// calls is how many requests the model received.
func (m *rawModel) calls() int { return len(m.requests()) }
