package daemon_test

import (
	"context"
	"testing"
	"time"

	"github.com/agentledger/agentledger/daemon"
	"github.com/agentledger/agentledger/internal/test/testdb"
)

// A daemon whose Maintenance is the zero value runs the janitor with each
// window's default, as the documentation of Retention says: the janitor
// used to refuse its zero windows and the daemon did not start.
func TestZeroMaintenanceTakesTheDefaults(t *testing.T) {
	t.Parallel()
	d := daemon.New(daemon.Config{Database: daemon.Database{URL: testdb.URL(t)},
		Notify: daemon.Notifications{NoDispatch: true}, Logger: quiet()})
	ctx, stop := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() { stopped <- d.Run(ctx) }()
	select {
	case <-d.Ready():
	case err := <-stopped:
		t.Fatalf("a daemon with the zero Maintenance did not start: %v", err)
	case <-time.After(60 * time.Second):
		t.Fatal("a daemon with the zero Maintenance was not ready in 60s")
	}
	stop()
	if err := <-stopped; err != nil {
		t.Errorf("Run: %v", err)
	}
	if daemon.DefaultRetention.Ledger != 7*24*time.Hour || daemon.DefaultRetention.IdempotencyKeys != 24*time.Hour {
		t.Errorf("DefaultRetention %+v", daemon.DefaultRetention)
	}
}
