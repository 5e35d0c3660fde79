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
		{"tool":"shop/charge","args":{"url":"https://ignored.example/"}}]}`))
	want := []struct{ step, subject, tool, origin, channel, kind string }{
		{"tool/0", "step 0", "http_request", "https://api.example.com:443", "", ""},
		{"compensate/tool/0", "step 0's compensation", "unsafe_http", "", "", ""},
		{"tool/1", "step 1", "http_request", "", "", ""},
		{"tool/2", "step 2", "http_request", "http://other.example:8080", "", ""}, // field names match as the tool's do
		{"tool/3", "step 3", "http_request", "", "", ""},                          // the tool refuses it, for its own reason
		{"tool/4", "step 4", "notify", "", "", ""},                                // an escaped reference is a reference
		{"tool/5", "step 5", "notify", "", "ops", ""},
		{"tool/6", "step 6", "create_task", "", "", "receipt"},
		{"tool/7", "step 7", "shop/charge", "", "", ""},
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
