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

// BuiltinKindSchemas are the payload schemas of the built-in kinds that
// read their payload (noop and echo take any; steps and agent are checked
// by their own packages): the door checks a submission against them as
// it does a typed kind's, so a payload the kind would refuse when it runs
// is refused before it is queued.
var BuiltinKindSchemas = map[string]json.RawMessage{
	"sleep": json.RawMessage(`{"type":"object","additionalProperties":false,"properties":{` +
		`"ms":{"type":"integer","minimum":0,"maximum":3600000,"description":"milliseconds to sleep, at most an hour"}}}`),
}

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
