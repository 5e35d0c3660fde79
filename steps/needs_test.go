package steps_test

import (
	"testing"

	"github.com/agentledger/agentledger/grants"
	"github.com/agentledger/agentledger/steps"
)

// Needs reads what a payload names literally, as the tools will read it,
// and leaves what an earlier result makes to the run.
func TestNeedsAreWhatThePayloadNamesLiterally(t *testing.T) {
	t.Parallel()
	got := steps.Needs([]byte(`{"steps":[
		{"tool":"http_request","args":{"method":"POST","url":"https://API.example.com/charges"},
		 "compensate":{"tool":"unsafe_http","args":{"method":"DELETE","url":"https://api.example.com/charges/${self.body.id}"}}},
		{"tool":"http_request","args":{"method":"GET","url":"${steps.0.body.next}"}},
		{"tool":"http_request","args":{"method":"GET","URL":"http://other.example:8080/"}},
		{"tool":"http_request","args":{"method":"GET","url":"ftp://files.example/"}},
		{"tool":"notify","args":{"channel":"\u0024{steps.0.body.ch}","text":"x"}},
		{"tool":"notify","args":{"channel":"ops","text":"x"}},
		{"tool":"create_task","args":{"kind":"receipt"}},
		{"tool":"shop/charge","args":{"url":"https://ignored.example/"}},
		{"tool":"http_request","args":{"method":"GET","url":"https://Evil.example/x?q=${steps.0.body.id}"}},
		{"tool":"http_request","args":{"method":"GET","url":"https://evil.example?q=${steps.0.body.id}"}},
		{"tool":"http_request","args":{"method":"GET","url":"http://evil.example:8080#${steps.0.body.id}"}},
		{"tool":"http_request","args":{"method":"GET","url":"https://${steps.0.body.host}/x"}},
		{"tool":"http_request","args":{"method":"GET","url":"https://api.${steps.0.body.domain}/x"}},
		{"tool":"http_request","args":{"method":"GET","url":"https://api.example.com:${steps.0.body.port}/x"}},
		{"tool":"http_request","args":{"method":"GET","url":"https://me@evil.example/${steps.0.body.id}"}},
		{"tool":"create_task","args":{"kind":"echo","Kind":"sleep"}}]}`))
	want := []struct{ step, subject, tool, origin, channel, kind string }{
		{"tool/0", "step 0", "http_request", "https://api.example.com:443", "", ""},
		{"compensate/tool/0", "step 0's compensation", "unsafe_http", "https://api.example.com:443", "", ""},
		{"tool/1", "step 1", "http_request", "", "", ""},
		{"tool/2", "step 2", "http_request", "http://other.example:8080", "", ""}, // field names match as the tool's do
		{"tool/3", "step 3", "http_request", "", "", ""},                          // the tool refuses it, for its own reason
		{"tool/4", "step 4", "notify", "", "", ""},                                // an escaped reference is a reference
		{"tool/5", "step 5", "notify", "", "ops", ""},
		{"tool/6", "step 6", "create_task", "", "", "receipt"},
		{"tool/7", "step 7", "shop/charge", "", "", ""},
		// A URL made of a result is checked by an origin written before it.
		{"tool/8", "step 8", "http_request", "https://evil.example:443", "", ""},
		{"tool/9", "step 9", "http_request", "https://evil.example:443", "", ""},
		{"tool/10", "step 10", "http_request", "http://evil.example:8080", "", ""},
		{"tool/11", "step 11", "http_request", "", "", ""}, // the host is known only when it runs
		{"tool/12", "step 12", "http_request", "", "", ""},
		{"tool/13", "step 13", "http_request", "", "", ""}, // so is the port
		{"tool/14", "step 14", "http_request", "", "", ""}, // the tool refuses credentials
		// The runner hands the tool its arguments re-encoded, keys sorted:
		// "kind" comes after "Kind" and stands.
		{"tool/15", "step 15", "create_task", "", "", "echo"},
	}
	if len(got) != len(want) {
		t.Fatalf("%d needs, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		g := got[i]
		origin := ""
		if g.URL != nil {
			origin = grants.Origin(g.URL)
		}
		if g.Step != w.step || g.Subject != w.subject || g.Tool != w.tool || origin != w.origin || g.Channel != w.channel || g.Kind != w.kind {
			t.Errorf("need %d: %+v (origin %q), want %+v", i, g, origin, w)
		}
	}
	if n := steps.Needs([]byte(`{"steps":[{"tool":7}]}`)); n != nil {
		t.Errorf("a payload that does not parse: %+v, want nothing (Check refuses it)", n)
	}
}

// A create_task call exposes its child's payload when it names the child's
// kind and payload literally; anything made of a result, anywhere in them,
// is the run's to know.
func TestNeedsExposeALiteralChild(t *testing.T) {
	t.Parallel()
	got := steps.Needs([]byte(`{"steps":[
		{"tool":"create_task","args":{"kind":"steps","payload":{"steps":[{"tool":"unsafe_http"}]}}},
		{"tool":"create_task","args":{"kind":"agent"}},
		{"tool":"create_task","args":{"kind":"agent","payload":null},
		 "compensate":{"tool":"create_task","args":{"kind":"steps","payload":{"steps":[{"tool":"notify"}]}}}},
		{"tool":"create_task","args":{"kind":"steps","payload":{"steps":[{"tool":"notify","args":{"text":"${steps.0.body.task_id}"}}]}}},
		{"tool":"create_task","args":{"kind":"agent","payload":{"prompt":"\u0024{steps.0.status}"}}},
		{"tool":"create_task","args":{"kind":"${steps.0.body.kind}","payload":{}}},
		{"tool":"create_task","args":{"kind":"steps","payload":"${steps.0.body}"}}]}`))
	want := []struct{ kind, child string }{
		{"steps", `{"steps":[{"tool":"unsafe_http"}]}`},
		{"agent", `{}`},
		{"agent", `{}`},
		{"steps", `{"steps":[{"tool":"notify"}]}`}, // the compensation's
		{"steps", ``},
		{"agent", ``}, // escaped, a reference all the same
		{"", ``},
		{"steps", ``},
	}
	if len(got) != len(want) {
		t.Fatalf("%d needs, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		if got[i].Kind != w.kind || string(got[i].Child) != w.child {
			t.Errorf("need %d (%s): kind %q child %s, want %q %s", i, got[i].Subject, got[i].Kind, got[i].Child, w.kind, w.child)
		}
	}
}
