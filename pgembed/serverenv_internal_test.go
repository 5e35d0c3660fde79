package pgembed

import (
	"slices"
	"testing"
)

// The server's programs get what they need to run and nothing else of
// ours: not our secrets (a started program's environment is readable by
// every process of its user), not PG* variables that would point them at
// another cluster.
func TestServerEnvKeepsOnlyWhatTheServerNeeds(t *testing.T) {
	got := serverEnv([]string{"PATH=/usr/bin", "HOME=/home/a", "AGENTLEDGER_LLM_API_KEY=sk-secret",
		"SLACK_BOT_TOKEN=xoxb-1", "DATABASE_URL=postgres://u:pw@h/db", "PGDATA=/elsewhere", "PGPORT=1",
		"LANG=C.UTF-8", "LC_ALL=C", "LOCPATH=/opt/locales", "TZ=UTC", "USER=a", "LOGNAME=a", "TMPDIR=/tmp", "PATHX=1"})
	want := []string{"PATH=/usr/bin", "HOME=/home/a", "LANG=C.UTF-8", "LC_ALL=C", "LOCPATH=/opt/locales", "TZ=UTC", "USER=a", "LOGNAME=a", "TMPDIR=/tmp"}
	if !slices.Equal(got, want) {
		t.Fatalf("serverEnv = %q, want %q", got, want)
	}
	if env := serverEnv(nil); env == nil {
		t.Fatal("serverEnv(nil) is nil: exec would pass our whole environment")
	}
}
