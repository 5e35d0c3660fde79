package daemon

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/agentledger/agentledger/grants"
	"github.com/agentledger/agentledger/internal/test/logbuf"
)

// A configured grant naming a tool or a kind this daemon has not is
// warned of (a kind named as a tool, a typo), as agentctl tenant grant
// warns; an MCP server's tool, "*" and what the daemon has are not.
func TestUnknownGrantsAreWarnedOf(t *testing.T) {
	logs := &logbuf.Buffer{}
	log := slog.New(slog.NewTextHandler(logs, nil))
	gs := map[string]*grants.Grant{
		"acme":   {Kinds: []string{"steps", "ecko"}, Tools: []string{"http_request", "sleep", "shop/charge", "shop/*"}},
		"globex": {All: true, Tools: []string{"*"}, Approve: &grants.Approve{Tools: []string{"notfy"}}},
	}
	warnUnknownGrants(gs, []string{"http_request", "notify"}, []string{"echo", "steps"}, []string{"shop"}, log)
	got := logs.String()
	for _, want := range []string{
		`msg="the configuration's grant names a tool this daemon does not have: it grants nothing here" tenant=acme tool=sleep tools="http_request, notify"`,
		`msg="the configuration's grant names a kind this daemon does not run: it grants nothing here" tenant=acme kind=ecko kinds="echo, steps"`,
		`tenant=globex tool=notfy`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the log lacks %s:\n%s", want, got)
		}
	}
	if n := strings.Count(got, "level=WARN"); n != 3 {
		t.Errorf("%d warnings, want 3:\n%s", n, got)
	}
}
