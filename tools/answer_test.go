package tools

import (
	"errors"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/agentledger/agentledger"
)

func TestAnswerClassifiesAsHTTPRequestDoes(t *testing.T) {
	req := &http.Request{Method: "POST", URL: &url.URL{Scheme: "https", Host: "tickets.internal", Path: "/tickets", User: url.UserPassword("u", "secret")}}
	for _, c := range []struct {
		code       int
		retryAfter string
		want       string // "" ok, "transient", "permanent", "after"
		err        string
	}{
		{201, "", "", ""},
		{503, "", "transient", `POST https://u:xxxxx@tickets.internal/tickets: 503 Service Unavailable: {"error":"later"}`},
		{503, "7", "after", ""},
		{429, "", "transient", ""},
		{408, "", "transient", ""},
		{409, "", "permanent", `POST https://u:xxxxx@tickets.internal/tickets: 409 Conflict: {"error":"later"}`},
		{302, "", "permanent", ""},
	} {
		resp := &http.Response{StatusCode: c.code, Request: req, Header: http.Header{}} // Status unset: Answer words it
		if c.retryAfter != "" {
			resp.Header.Set("Retry-After", c.retryAfter)
		}
		res, err := Answer(resp, []byte(`{"error":"later"}`))
		if res.Status != c.code || string(res.Body) != `{"error":"later"}` {
			t.Errorf("%d: result %d %s, want the answer kept", c.code, res.Status, res.Body)
		}
		var perm *agentledger.PermanentError
		var after *agentledger.RetryAfterError
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%d: %v, want the result", c.code, err)
		case c.want == "transient" && (err == nil || errors.As(err, &perm) || errors.As(err, &after)):
			t.Errorf("%d: %v, want a transient error", c.code, err)
		case c.want == "permanent" && !errors.As(err, &perm):
			t.Errorf("%d: %v, want a permanent error", c.code, err)
		case c.want == "after" && (!errors.As(err, &after) || after.After != 7*time.Second):
			t.Errorf("%d: %v, want to be sent again after 7s", c.code, err)
		}
		if c.err != "" && (err == nil || err.Error() != c.err) {
			t.Errorf("%d: error %v, want %q", c.code, err, c.err)
		}
	}
}
