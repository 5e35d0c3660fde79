package tools_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/tools"
)

// fakeLimits answers Take with the waits given, in turn, and records the
// targets asked for.
type fakeLimits struct {
	mu      sync.Mutex
	waits   []time.Duration
	err     error
	targets []string
}

func (f *fakeLimits) Take(_ context.Context, target string) (time.Duration, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.targets = append(f.targets, target)
	if f.err != nil {
		return 0, f.err
	}
	w := f.waits[0]
	if len(f.waits) > 1 {
		f.waits = f.waits[1:]
	}
	return w, nil
}

func admitOf(t *testing.T, f *fakeLimits, url string) func(context.Context) error {
	t.Helper()
	tool, err := tools.NewHTTPRequest(tools.HTTPConfig{AllowedHosts: []string{"https://billing.internal:8080"}, Limits: f})
	if err != nil {
		t.Fatal(err)
	}
	eff, err := tool.Effect(tools.Call{StepPath: "tool/0", Args: json.RawMessage(`{"method":"POST","url":"` + url + `"}`)})
	if err != nil {
		t.Fatal(err)
	}
	return eff.Admit
}

// A short wait is waited in place; a long one defers the task naming the
// origin; a limit that cannot be checked defers too (calls never run
// unlimited); a host that is not allowed books nothing.
func TestHTTPAdmitWaitsOrDefers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const url = "https://Billing.internal:8080/charges"
	const target = "http:https://billing.internal:8080"

	short := &fakeLimits{waits: []time.Duration{10 * time.Millisecond, 0}}
	if err := admitOf(t, short, url)(ctx); err != nil {
		t.Fatalf("short wait: %v", err)
	}
	if len(short.targets) != 2 || short.targets[0] != target {
		t.Fatalf("short wait asked %q, want %s twice", short.targets, target)
	}

	long := &fakeLimits{waits: []time.Duration{2100 * time.Millisecond}}
	before := time.Now()
	err := admitOf(t, long, url)(ctx)
	var d *agentledger.DeferredError
	if !errors.As(err, &d) || d.Until.Before(before.Add(2100*time.Millisecond)) || d.Target != target ||
		d.Reason != target+": rate limit, next slot in 2.1s" || d.TargetKind() != "http" {
		t.Fatalf("long wait: %v (%+v)", err, d)
	}

	down := &fakeLimits{err: errors.New("connection refused")}
	if err := admitOf(t, down, url)(ctx); !errors.As(err, &d) || !strings.Contains(d.Reason, "cannot be checked") {
		t.Fatalf("limit unavailable: %v", err)
	}

	if admit := admitOf(t, &fakeLimits{}, "https://elsewhere.example/x"); admit != nil {
		t.Fatal("a host that is not allowed is admitted: it would book a call it refuses")
	}
}
