package daemon

import (
	"context"
	"log/slog"
	"os"
	"strings"
	"testing"

	"github.com/agentledger/agentledger/internal/test/logbuf"
	"github.com/agentledger/agentledger/internal/test/testdb"
	"github.com/agentledger/agentledger/registry"
)

// A worker id a live daemon elsewhere announced is warned of; one this
// process announced before (a restart), or one no daemon holds, is not.
func TestSharedWorkerIDIsWarnedOf(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	s := registry.New(db)
	me, _ := os.Hostname()
	for _, r := range []registry.Registration{
		{ID: "twin", Host: "other-host", PID: 4242, Queues: []string{"default"}, Kinds: []string{"echo"}},
		{ID: "restarted", Host: me, PID: os.Getpid(), Queues: []string{"default"}, Kinds: []string{"echo"}},
	} {
		if err := s.Register(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	warned := func(id string) string {
		logs := &logbuf.Buffer{}
		warnSharedWorkerID(ctx, db, id, slog.New(slog.NewTextHandler(logs, nil)))
		return logs.String()
	}
	if got := warned("twin"); !strings.Contains(got, "another live daemon announced itself under this worker id") ||
		!strings.Contains(got, "other_host=other-host other_pid=4242") {
		t.Errorf("a live twin: %q", got)
	}
	for _, id := range []string{"restarted", "nobody"} {
		if got := warned(id); got != "" {
			t.Errorf("%s: warned %q", id, got)
		}
	}
}
