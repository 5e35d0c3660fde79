package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/internal/test/testenv"
	"github.com/agentledger/agentledger/registry"
)

// A running task whose lease expired (its worker died) says so in the
// list, as show does, where its DETAIL was "-".
func TestListSaysALeaseExpired(t *testing.T) {
	t.Parallel()
	e := testenv.New(t)
	ctx := context.Background()
	if err := e.Registry.Register(ctx, registry.Registration{ID: "w1", Host: "host", PID: 1, Queues: []string{"default"},
		Kinds: []string{"noop"}, Caps: []string{}}); err != nil { // a live daemon that may claim it
		t.Fatal(err)
	}
	s := claims.New(e.DB)
	if _, err := s.Enqueue(ctx, claims.EnqueueParams{Kind: "noop"}); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Claim(ctx, claims.ClaimParams{Queue: "default", Worker: "gone", Limit: 1, Lease: time.Minute}); err != nil || len(got) != 1 {
		t.Fatalf("claim: %v, %d tasks", err, len(got))
	}
	if _, err := e.DB.Exec(ctx, `UPDATE tasks SET lease_expires_at = now() - interval '90 seconds'`); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := agentctlAt(e.DB.Config().ConnString(), "list")
	if code != 0 || !strings.Contains(out, "running") || !strings.Contains(out, "lease expired 1m ago: claimable again\n") {
		t.Fatalf("list: exit %d\n%s%s", code, out, errOut)
	}
}

// The list shows what a task waits for whole up to 80 runes: two tasks
// waiting for daemons that allow different origins differ at the end.
func TestListShowsWhatATaskWaitsFor(t *testing.T) {
	t.Parallel()
	e := testenv.New(t)
	url := e.DB.Config().ConnString()
	ctx := context.Background()
	if err := e.Registry.Register(ctx, registry.Registration{ID: "w1", Host: "host", PID: 1, Queues: []string{"default"},
		Kinds: []string{"steps"}, Caps: []string{}}); err != nil {
		t.Fatal(err)
	}
	for _, origin := range []string{"http://127.0.0.1:47110", "http://127.0.0.1:47199"} {
		if _, err := claims.New(e.DB).Enqueue(ctx, claims.EnqueueParams{Kind: "steps", Needs: []string{"http_request@" + origin}}); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errOut := agentctlAt(url, "list")
	if code != 0 {
		t.Fatalf("list: exit %d\n%s%s", code, out, errOut)
	}
	for _, origin := range []string{"http://127.0.0.1:47110", "http://127.0.0.1:47199"} {
		if !strings.Contains(out, "waiting for a daemon with http_request to "+origin+"\n") {
			t.Errorf("the list does not say whole what a task waits for (%s):\n%s", origin, out)
		}
	}
}
