package main

import (
	"context"
	"fmt"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/claims"
)

// waitFor waits until task id is in state want, and returns it.
func waitFor(ctx context.Context, s *claims.Store, id int64, want agentledger.TaskState) (*agentledger.Task, error) {
	deadline := time.Now().Add(time.Minute)
	for {
		t, err := s.Get(ctx, "", id)
		if err != nil {
			return nil, err
		}
		switch {
		case t.State == want:
			return t, nil
		case t.State == agentledger.StateDead, t.State == agentledger.StateSucceeded, t.State == agentledger.StateNeedsAttention:
			return nil, fmt.Errorf("task %d is %s, not %s: %s", id, t.State, want, t.LastError)
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("task %d is still %s after a minute", id, t.State)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
