package worker_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/internal/test/testdb"
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
			if strings.Contains(l, "tasks wait for a kind this worker does not serve") {
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
