package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/agentledger/agentledger"
)

// Noop does nothing and succeeds: the kind used to measure the queue itself.
func Noop(context.Context, *agentledger.Task) (json.RawMessage, error) { return nil, nil }

// Echo succeeds with its payload as the result.
func Echo(_ context.Context, t *agentledger.Task) (json.RawMessage, error) { return t.Payload, nil }

// sleepArgs is the payload of the sleep kind.
type sleepArgs struct {
	MS int64 `json:"ms"`
}

// maxSleep bounds the sleep kind.
const maxSleep = time.Hour

// Sleep waits payload.ms milliseconds (at most an hour) or until cancelled:
// a long task for trying cancel, heartbeats and shutdown by hand.
func Sleep(ctx context.Context, t *agentledger.Task) (json.RawMessage, error) {
	var a sleepArgs
	if err := json.Unmarshal(t.Payload, &a); err != nil {
		return nil, agentledger.Permanent(fmt.Errorf("sleep: payload must be {\"ms\": <milliseconds>}: %v", err))
	}
	d := time.Duration(a.MS) * time.Millisecond
	if d < 0 || d > maxSleep {
		return nil, agentledger.Permanent(fmt.Errorf("sleep: ms=%d is outside 0..%d", a.MS, maxSleep.Milliseconds()))
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return json.RawMessage(fmt.Sprintf(`{"slept_ms":%d}`, a.MS)), nil
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
}
