package daemon_test

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/agentledger/agentledger/daemon"
	"github.com/agentledger/agentledger/internal/test/logbuf"
	"github.com/agentledger/agentledger/internal/test/testdaemon"
	"github.com/agentledger/agentledger/internal/test/testdb"
)

// A daemon on a database whose downstream keys are not scoped (upgraded
// from an older release) says so at start, with what to run; on a new
// database, scoped by its migrations, it says nothing.
func TestUnscopedKeysAreWarnedOf(t *testing.T) {
	t.Parallel()
	const warning = "the downstream keys of this database do not carry its identity"
	for _, scoped := range []bool{true, false} {
		url := testdb.URL(t)
		if !scoped {
			if _, err := testdb.Open(t, url).Exec(context.Background(), `UPDATE installation SET keys_scoped_from = NULL`); err != nil {
				t.Fatal(err)
			}
		}
		var logs logbuf.Buffer
		d := daemon.New(daemon.Config{
			Database:    daemon.Database{URL: url},
			Maintenance: daemon.Maintenance{NoCron: true, NoJanitor: true},
			Logger:      slog.New(slog.NewTextHandler(&logs, nil)),
			Stdout:      io.Discard,
		})
		testdaemon.Run(t, d)
		out := logs.String()
		if got := strings.Contains(out, warning) && strings.Contains(out, "agentctl scope-keys --yes"); got == scoped {
			t.Errorf("scoped %v: warned %v:\n%s", scoped, got, out)
		}
	}
}
