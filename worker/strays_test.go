package worker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/internal/test/testdb"
	"github.com/agentledger/agentledger/registry"
	"github.com/agentledger/agentledger/worker"
)

// lines is a slog handler sending each record's text to a channel.
type lines chan string

func (l lines) Enabled(context.Context, slog.Level) bool { return true }
func (l lines) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString(r.Message)
	r.Attrs(func(a slog.Attr) bool { b.WriteString(" " + a.String()); return true })
	select {
	case l <- b.String():
	default:
	}
	return nil
}
func (l lines) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l lines) WithGroup(string) slog.Handler      { return l }

// A task of a kind no handler serves is not silently left waiting: the
// pool warns about it.
func TestPoolWarnsAboutKindsItDoesNotServe(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	if _, err := claims.New(db).Enqueue(context.Background(), claims.EnqueueParams{Kind: "bogus"}); err != nil {
		t.Fatal(err)
	}
	logs := make(lines, 100)
	runPool(t, db, worker.Config{Handlers: map[string]worker.Handler{"noop": worker.HandlerFunc(
		func(context.Context, *agentledger.Task) (json.RawMessage, error) { return nil, nil })}, Logger: slog.New(logs)})
	timeout := time.After(30 * time.Second)
	for {
		select {
		case l := <-logs:
			if strings.Contains(l, "tasks wait for a kind no live daemon serves") {
				if !strings.Contains(l, "kind=bogus") || !strings.Contains(l, "tasks=1") {
					t.Fatalf("warning %q does not name the kind and count", l)
				}
				return
			}
		case <-timeout:
			t.Fatal("no warning about the task of an unserved kind in 30s")
		}
	}
}

// A look warns about what no live pool of the fleet would claim, and only
// that: a kind or a need another live daemon has is its work, not a stray
// (a mixed fleet's daemons would otherwise each warn about the others'
// tasks every minute); what none has is warned of with the reason.
func TestStraysTheFleetServesAreNotWarnedOf(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	s := claims.New(db)
	var ids []int64
	for _, p := range []claims.EnqueueParams{
		{Kind: "other"},
		{Kind: "bogus"},
		{Kind: "steps", Needs: []string{"tool:open_ticket"}},
		{Kind: "steps", Needs: []string{"tool:nowhere"}},
		{Kind: "steps", Needs: []string{"tool:nowhere"}},
		{Kind: "mail", Needs: []string{"tool:smtp"}}, // a kind this pool does not serve, served without what it needs
		{Kind: "steps", Queue: "elsewhere"},          // a queue no live daemon works
	} {
		r, err := s.Enqueue(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, r.Task.ID)
	}
	// Another daemon serves kind other, and steps with tool open_ticket;
	// a third serves kind mail without tool smtp.
	if err := registry.New(db).Register(ctx, registry.Registration{ID: "other-daemon", Queues: []string{"default"},
		Kinds: []string{"other", "steps"}, Caps: []string{"tool:open_ticket"}}); err != nil {
		t.Fatal(err)
	}
	if err := registry.New(db).Register(ctx, registry.Registration{ID: "mail-daemon", Queues: []string{"default"},
		Kinds: []string{"mail"}, Caps: []string{}}); err != nil {
		t.Fatal(err)
	}
	logs := make(lines, 100)
	p, err := worker.New(db, worker.Config{
		Handlers: map[string]worker.Handler{"steps": worker.HandlerFunc(
			func(context.Context, *agentledger.Task) (json.RawMessage, error) { return nil, nil })},
		Caps:   func() []string { return []string{} },
		Logger: slog.New(logs),
	})
	if err != nil {
		t.Fatal(err)
	}
	worker.ReportStrays(ctx, p)
	close(logs)
	var warned []string
	for l := range logs {
		if strings.HasPrefix(l, "tasks wait ") {
			warned = append(warned, l)
		}
	}
	want := []string{
		fmt.Sprintf("tasks wait for a kind no live daemon serves; start one that serves it, or the kind is wrong queue=default kind=bogus tasks=1 ids=[%d] reason=no live daemon serves bogus on queue default", ids[1]),
		fmt.Sprintf("tasks wait for what no live daemon serving their kind has; start one that has it, or fix what the reason names queue=default kind=mail needs=tool:smtp tasks=1 ids=[%d] reason=waiting for a daemon with tool smtp", ids[5]),
		fmt.Sprintf("tasks wait for what no live daemon serving their kind has; start one that has it, or fix what the reason names queue=default kind=steps needs=tool:nowhere tasks=2 ids=[%d %d] reason=waiting for a daemon with tool nowhere", ids[3], ids[4]),
		fmt.Sprintf("tasks wait on a queue no live daemon works; start one on it, or the queue is wrong queue=elsewhere tasks=1 ids=[%d]", ids[6]),
	}
	if len(warned) != len(want) {
		t.Fatalf("%d warnings, want %d (kind bogus, mail's tool smtp, steps' tool nowhere, queue elsewhere): %q", len(warned), len(want), warned)
	}
	for i, want := range want {
		if warned[i] != want {
			t.Errorf("warning %d:\n %q\nwant\n %q", i+1, warned[i], want)
		}
	}
}
