package webhooks_test

import (
	"net/http"
	"testing"

	"github.com/agentledger/agentledger/internal/test/syncrep"
)

// A redelivery is answered as a duplicate — and its sender stops — only
// once a synchronous standby has the first delivery: that one's commit's
// wait for the standby may have been cut short, its sender told of an
// error and sending again.
func TestADuplicateDeliveryIsAnsweredOnceTheStandbyHasIt(t *testing.T) {
	t.Parallel()
	url, admin := syncrep.Server(t)
	syncrep.Release(t, admin)
	e := newEnvOn(t, syncrep.Open(t, url, "hooks"), nil, nil)
	const body = `{"ref":"refs/heads/main"}`
	first := e.github(ghSecret, "d-1", "push", body)
	if first.status != http.StatusAccepted {
		t.Fatalf("first delivery: %d %s", first.status, first.raw)
	}
	syncrep.Hold(t, admin)
	var again answer
	syncrep.AwaitsStandby(t, admin, "hooks", "the redelivery's answer", func() { again = e.github(ghSecret, "d-1", "push", body) })
	if again.status != http.StatusOK || again.json["duplicate"] != true || again.taskID() != first.taskID() {
		t.Fatalf("redelivery once the standby had it: %d %s, want 200 duplicate of task %d", again.status, again.raw, first.taskID())
	}
}
