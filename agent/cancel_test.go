package agent_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/agent"
	"github.com/agentledger/agentledger/agentledgertest/fakeopenai"
)

// An operator's cancel that comes while the loop waits to ask a failing
// model again ends the wait: the request it made stays the only one.
func TestCancelEndsTheWaitBeforeARetry(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *agent.Config) { c.Retries = 3; c.RetryBase = 20 * time.Second },
		fakeopenai.Reply{Status: 503}, fakeopenai.Reply{Status: 503}, fakeopenai.Reply{Status: 503})
	ctx, stop := agentledger.AttemptContext(context.Background())
	defer stop(nil)
	done := make(chan error, 1)
	go func() {
		_, err := e.agent.Work(ctx, e.submit(`{"prompt": "hi"}`))
		done <- err
	}()
	for e.fake.Calls() == 0 { // the first request is answered 503; the loop waits to retry
		time.Sleep(5 * time.Millisecond)
	}
	stop(agentledger.ErrCancelled)
	select {
	case err := <-done:
		if !errors.Is(err, agentledger.ErrCancelled) || e.fake.Calls() != 1 {
			t.Fatalf("after the cancel: %v, %d model requests; want the cancel, and one request", err, e.fake.Calls())
		}
	case <-time.After(15 * time.Second): // below the 20 s backoff: the wait was not ended
		t.Fatalf("the cancel did not end the wait before the retry (%d requests)", e.fake.Calls())
	}
}
