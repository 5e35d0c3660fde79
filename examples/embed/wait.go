package main

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/claims"
)

func bytesReader(b []byte) *bytes.Reader { return bytes.NewReader(b) }

// waitSucceeded waits until task id has succeeded.
func waitSucceeded(ctx context.Context, s *claims.Store, id int64) error {
	deadline := time.Now().Add(time.Minute)
	for {
		t, err := s.Get(ctx, "", id)
		if err != nil {
			return err
		}
		switch t.State {
		case agentledger.StateSucceeded:
			return nil
		case agentledger.StateDead, agentledger.StateNeedsAttention:
			return fmt.Errorf("task %d is %s: %s", id, t.State, t.LastError)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("task %d is still %s after a minute", id, t.State)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
