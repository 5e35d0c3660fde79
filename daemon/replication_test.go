package daemon_test

import (
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"

	"github.com/agentledger/agentledger/daemon"
	"github.com/agentledger/agentledger/internal/test/logbuf"
	"github.com/agentledger/agentledger/internal/test/testdaemon"
	"github.com/agentledger/agentledger/internal/test/testdb"
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
		{"embedded cluster", []string{"https://payments.example"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var logs logbuf.Buffer
			url, dir := testdb.URL(t), ""
			if tc.name == "embedded cluster" { // its own, in a state directory: no DatabaseURL
				url, dir = "", searchableDir(t)
			}
			d := daemon.New(daemon.Config{
				Database:    daemon.Database{URL: url, StateDir: dir},
				HTTPTools:   daemon.HTTPTools{UnsafeAllowedHosts: tc.hosts},
				Maintenance: daemon.Maintenance{NoCron: true, NoJanitor: true},
				Logger:      slog.New(slog.NewTextHandler(&logs, nil)),
				Stdout:      io.Discard,
			})
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

// searchableDir is a new directory that the server, run as postgres when
// the test runs as root, can enter (t.TempDir's parent is private).
func searchableDir(t *testing.T) string {
	dir, err := os.MkdirTemp("", "agentd-daemon-test-*")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}
