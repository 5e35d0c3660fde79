package worker

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentledger/agentledger"
)

// A queue no task could be submitted to is refused when the pool is
// configured, by name: the claim would never find a task in it.
func TestConfigRefusesQueuesNoTaskCanBeIn(t *testing.T) {
	for _, tc := range []struct {
		queues []string
		want   string
	}{
		{[]string{"default", ""}, "a queue name is empty"},
		{[]string{"default", "my queue"}, `queue "my queue" must be 1-128 characters`},
		{[]string{"bad/one", ""}, "a queue name is empty"},
	} {
		c := Config{Queues: tc.queues}
		if err := c.setDefaults(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("queues %q: %v, want an error saying %s", tc.queues, err, tc.want)
		}
	}
	noop := HandlerFunc(func(context.Context, *agentledger.Task) (json.RawMessage, error) { return nil, nil })
	c := Config{Queues: []string{"default", "billing.eu"}, Handlers: map[string]Handler{"noop": noop}}
	if err := c.setDefaults(); err != nil {
		t.Errorf("good queues refused: %v", err)
	}
}
