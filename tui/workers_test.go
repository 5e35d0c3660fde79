package tui

import (
	"strings"
	"testing"
	"time"

	"github.com/agentledger/agentledger/claims"
)

func TestWorkersViewHighlightsStale(t *testing.T) {
	t.Parallel()
	store := newFakeStore(1, epoch)
	store.workers = []claims.Worker{
		{ID: "alpha-1", Tasks: 12, LastHeartbeat: epoch.Add(-3 * time.Second), NextExpiry: epoch.Add(27 * time.Second)},
		{ID: "beta-2", Tasks: 3, LastHeartbeat: epoch.Add(-2 * time.Minute), NextExpiry: epoch.Add(-90 * time.Second), Expired: 3},
		{ID: "gamma-3", Tasks: 1, LastHeartbeat: epoch.Add(-45 * time.Second), NextExpiry: epoch.Add(5 * time.Second)},
	}
	d := newDriver(t, store, Options{}, 100, 20)
	d.keys("w")
	v := d.view()
	checkFrame(t, v, 100, 20)
	for _, want := range []string{
		"3 workers holding 16 leases · 2 stale",
		"alpha-1                        12     3s ago     in 27s       0        ok",
		"beta-2                         3      2m ago     1m ago       3        STALE: 3 lease(s) ran out",
		"gamma-3                        1      45s ago    in 5s        0        STALE",
	} {
		if !strings.Contains(v, want) {
			t.Errorf("workers view lacks %q:\n%s", want, v)
		}
	}
	d.keys("esc")
	if d.app().view != viewTasks {
		t.Error("esc did not go back to the tasks")
	}
}
