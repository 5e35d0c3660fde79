package main

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/client"
)

func bytesReader(b []byte) *bytes.Reader { return bytes.NewReader(b) }

// succeeded waits, a minute at most, until task id, read through c, has
// ended, and says why when it did not succeed.
func succeeded(ctx context.Context, c client.Client, id int64) (*agentledger.Task, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	t, err := client.Wait(ctx, c, id)
	switch {
	case err != nil:
		return nil, fmt.Errorf("task %d: %w", id, err)
	case t.State != agentledger.StateSucceeded:
		return nil, fmt.Errorf("task %d is %s: %s", id, t.State, t.LastError)
	}
	return t, nil
}
