package worker

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

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

// Check refuses what New would, without handlers: a program checks its
// settings before it opens the database.
func TestConfigCheck(t *testing.T) {
	if err := (Config{}).Check(); err != nil {
		t.Errorf("the defaults: %v", err)
	}
	for _, tc := range []struct {
		c    Config
		want string
	}{
		{Config{Concurrency: -1}, "worker: concurrency: -1 must be positive"},
		{Config{Concurrency: 5, BatchSize: -1}, "worker: batch_size: -1 must be positive"},
		{Config{Lease: -time.Second}, "worker: lease: -1s is shorter than 1s"},
		{Config{Lease: 30 * time.Second, HeartbeatInterval: time.Minute}, "worker: heartbeat_interval: 1m0s must be positive and at most half the lease (30s)"},
		{Config{Grace: -time.Second}, "worker: grace: -1s must not be negative"},
		{Config{PollInterval: -time.Second}, "worker: poll_interval: -1s must be positive"},
		{Config{Queues: []string{"bad queue!"}}, `worker: queues: queue "bad queue!" must be 1-128 characters`},
	} {
		var ie *agentledger.InvalidError
		if err := tc.c.Check(); err == nil || !strings.HasPrefix(err.Error(), tc.want) || !errors.As(err, &ie) {
			t.Errorf("%+v: %v, want %q naming the field", tc.c, err, tc.want)
		}
	}
}
