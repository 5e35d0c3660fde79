package daemon_test

import (
	"context"
	"io"
	"slices"
	"testing"
	"time"

	"github.com/agentledger/agentledger/daemon"
	"github.com/agentledger/agentledger/internal/test/testdaemon"
	"github.com/agentledger/agentledger/internal/test/testdb"
	"github.com/agentledger/agentledger/registry"
	"github.com/agentledger/agentledger/tools"
)

// A daemon announces what it can run: every tool it has — among them
// those tools.Everywhere says every daemon has, which the door therefore
// leaves out of a task's needs —, the origins its allow-lists name, and a
// model endpoint, with the agent loop's version, when it has one.
func TestDaemonAnnouncesItsCapabilities(t *testing.T) {
	t.Parallel()
	url := testdb.URL(t)
	d := daemon.New(daemon.Config{
		Database:    daemon.Database{URL: url},
		Worker:      daemon.Worker{PollInterval: 50 * time.Millisecond},
		Maintenance: daemon.Maintenance{NoCron: true, NoJanitor: true},
		HTTPTools:   daemon.HTTPTools{AllowedHosts: []string{"billing.internal:8443", "http://127.0.0.1:7450"}},
		Model:       daemon.Model{BaseURL: "http://127.0.0.1:1/v1", Name: "m"},
		Logger:      quiet(),
		Stdout:      io.Discard,
	})
	testdaemon.Run(t, d)
	live, err := registry.New(testdb.Open(t, url)).LiveWorkers(context.Background())
	if err != nil || len(live) != 1 {
		t.Fatalf("live workers %+v %v", live, err)
	}
	caps := live[0].Caps
	want := []string{"model", "agent:2", "agent:max-steps=10", "http_request@https://billing.internal:8443", "http_request@http://127.0.0.1:7450"}
	for _, name := range tools.Everywhere {
		want = append(want, registry.CapTool(name))
	}
	for _, c := range want {
		if !slices.Contains(caps, c) {
			t.Errorf("capabilities %q lack %q", caps, c)
		}
	}
	if !slices.IsSorted(caps) {
		t.Errorf("capabilities %q are not sorted", caps)
	}
}
