package waits

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/saga"
)

// These are how a Go kind (daemon.Kind) waits: each is a call of a wait
// tool through saga.Call at journal place "call/<path>", so ctx must be the
// handler's own. While the wait waits they return the parking
// *agentledger.DeferredError: the handler returns it as it is, and the
// daemon parks the task; when what it waits for comes, the task runs again
// from the top, and every call before the wait — this one included, once
// ended — is served from the ledger.

// ForSignal waits for signal name with correlation key, up to timeout
// (zero: DefaultTimeout), and returns its payload.
func ForSignal(ctx context.Context, t *agentledger.Task, path, name, key string, timeout time.Duration) (json.RawMessage, error) {
	args := map[string]string{"signal": name, "key": key}
	if timeout != 0 {
		args["timeout"] = timeout.String()
	}
	res, err := saga.Call(ctx, t, path, ToolSignal, args, nil)
	return res.Body, err
}

// Sleep waits durably for d, counted from when the task first reached
// path.
func Sleep(ctx context.Context, t *agentledger.Task, path string, d time.Duration) error {
	_, err := saga.Call(ctx, t, path, ToolTimer, map[string]string{"for": d.String()}, nil)
	return err
}

// SleepUntil waits durably until at.
func SleepUntil(ctx context.Context, t *agentledger.Task, path string, at time.Time) error {
	_, err := saga.Call(ctx, t, path, ToolTimer, map[string]string{"until": at.UTC().Format(time.RFC3339)}, nil)
	return err
}

// ForChildren waits for the task's children as spec says (zero: every
// child, all of them, a failure failing the call), up to timeout (zero:
// DefaultTimeout).
func ForChildren(ctx context.Context, t *agentledger.Task, path string, spec ChildrenSpec, timeout time.Duration) (ChildrenResult, error) {
	args := map[string]any{}
	if spec.Mode != "" {
		args["mode"] = spec.Mode
	}
	if spec.OnFailure != "" {
		args["on_failure"] = spec.OnFailure
	}
	if len(spec.Tasks) > 0 {
		args["tasks"] = spec.Tasks
	}
	if timeout != 0 {
		args["timeout"] = timeout.String()
	}
	res, err := saga.Call(ctx, t, path, ToolChildren, args, nil)
	if err != nil {
		return ChildrenResult{}, err
	}
	var r ChildrenResult
	if err := json.Unmarshal(res.Body, &r); err != nil {
		return ChildrenResult{}, fmt.Errorf("wait for children at %s: its result: %w", path, err)
	}
	return r, nil
}
