package slackui_test

import (
	"os"
	"strings"
	"testing"

	"github.com/agentledger/agentledger/approvals/slackui"
)

// The app manifest in the repository sends clicks where agentd serves
// them and asks for the scopes of the calls agentd makes.
func TestManifest(t *testing.T) {
	b, err := os.ReadFile("../../deploy/slack-app-manifest.yaml")
	if err != nil {
		t.Fatal(err)
	}
	m := string(b)
	for _, want := range []string{"request_url: https://agentd.example.com" + slackui.Path, "is_enabled: true",
		"- chat:write", "- channels:history", "- channels:read", "- usergroups:read"} {
		if !strings.Contains(m, want) {
			t.Errorf("the manifest lacks %q", want)
		}
	}
}
