package slackfake

import (
	"encoding/json"
	"maps"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// handler runs one Web API method on the parsed form with s.mu held: it
// answers a response body, or a Slack error code.
type handler func(s *Server, form url.Values) (any, string)

var handlers = map[string]handler{
	"auth.test":             (*Server).authTest,
	"chat.postMessage":      (*Server).postMessage,
	"chat.update":           (*Server).update,
	"conversations.history": (*Server).history,
	"usergroups.users.list": (*Server).groupUsers,
	"conversations.list":    (*Server).list,
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	at := time.Now() // the arrival, before parsing or waiting for the lock
	method := strings.TrimPrefix(r.URL.Path, "/")
	h := handlers[method]
	if h == nil {
		writeJSON(w, http.StatusNotFound, map[string]any{"ok": false, "error": "unknown_method"})
		return
	}
	if err := r.ParseForm(); err != nil {
		writeJSON(w, http.StatusOK, map[string]any{"ok": false, "error": "invalid_form_data"})
		return
	}
	token, bearer := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !bearer {
		token = r.PostForm.Get("token")
	}

	s.mu.Lock()
	s.calls[method]++
	if !s.count {
		form := maps.Clone(r.PostForm)
		form.Del("token")
		s.forms[method] = append(s.forms[method], form)
	}
	s.arrive(method, r.PostForm, at)
	// Every answer carries the server's clock, as Slack's do.
	w.Header().Set("Date", s.now().UTC().Format(http.TimeFormat))
	f, faulty := s.popFault(method)
	if faulty && !f.Apply {
		s.mu.Unlock()
		misbehave(w, f, token)
		return
	}
	var body any
	var code string
	switch {
	case token == "":
		code = "not_authed"
	case token != s.token:
		code = "invalid_auth"
	default:
		body, code = h(s, r.PostForm)
	}
	s.mu.Unlock()

	switch {
	case faulty:
		misbehave(w, f, token)
	case code != "":
		writeJSON(w, http.StatusOK, map[string]any{"ok": false, "error": code})
	default:
		writeJSON(w, http.StatusOK, body)
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
