package daemon_test

import (
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/agentledger/agentledger/daemon"
	"github.com/agentledger/agentledger/internal/logbuf"
	"github.com/agentledger/agentledger/internal/testdaemon"
	"github.com/agentledger/agentledger/internal/testdb"
)

// The test server has no standby: a daemon with unsafe_http enabled warns
// at start, naming it; one without unsafe tools says nothing of it.
func TestWarnsOfUnsafeToolsWithoutSyncStandby(t *testing.T) {
	t.Parallel()
	const warning = "no synchronous standby"
	for _, tc := range []struct {
		name  string
		hosts []string
		warn  bool
	}{
		{"unsafe_http enabled", []string{"https://payments.example"}, true},
		{"no unsafe tools", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var logs logbuf.Buffer
			d := daemon.New(daemon.Config{DatabaseURL: testdb.URL(t), Logger: slog.New(slog.NewTextHandler(&logs, nil)),
				Stdout: io.Discard, UnsafeHTTPAllowedHosts: tc.hosts, NoCron: true, NoJanitor: true})
			testdaemon.Run(t, d)
			out := logs.String()
			if got := strings.Count(out, warning); got != map[bool]int{true: 1, false: 0}[tc.warn] {
				t.Fatalf("%d warnings of %q, want warn=%v; log:\n%s", got, warning, tc.warn, out)
			}
			if tc.warn && !strings.Contains(out, "unsafe_tools=unsafe_http") {
				t.Errorf("the warning does not name unsafe_http:\n%s", out)
			}
		})
	}
}
