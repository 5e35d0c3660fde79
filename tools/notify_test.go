package tools_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/notify"
	"github.com/agentledger/agentledger/tools"
)

const notifyArgs = `{"channel":"ops","text":"deploy finished"}`

// countingSink counts the posts that reach the console sink and can run a
// hook after (or instead of) one.
type countingSink struct {
	*notify.ConsoleSink
	posts atomic.Int64
	after func() error // run once after the next post; its error is returned
	drop  bool         // the hook runs before posting, and nothing is posted
}

func (s *countingSink) Post(ctx context.Context, key string, m notify.Message) (string, error) {
	hook := s.after
	s.after = nil
	if s.drop && hook != nil {
		return "", hook()
	}
	ref, err := s.ConsoleSink.Post(ctx, key, m)
	s.posts.Add(1)
	if hook != nil {
		if herr := hook(); herr != nil {
			return "", herr
		}
	}
	return ref, err
}

func newCountingSink(t *testing.T) (*countingSink, *bytes.Buffer, string) {
	t.Helper()
	var out bytes.Buffer
	path := filepath.Join(t.TempDir(), "notify.jsonl")
	s, err := notify.NewConsoleSink(&out, path)
	if err != nil {
		t.Fatal(err)
	}
	return &countingSink{ConsoleSink: s}, &out, path
}

// linesWith counts the file's records carrying key.
func linesWith(t *testing.T, path, key string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), `"key":"`+key+`"`)
}

func TestNotifyPostsOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t)
	sink, out, path := newCountingSink(t)
	tool := tools.NewNotify(sink)
	a := e.task()
	c := call(a, "notify/on-done", notifyArgs)

	first, err := tools.Invoke(ctx, e.Ledger, tool, c)
	if err != nil || first.ExternalRef != "notify.jsonl:1" || !sameJSON(t, first.Body, []byte(`{"channel":"ops","ref":"notify.jsonl:1"}`)) {
		t.Fatalf("first: %+v %v", first, err)
	}
	again, err := tools.Invoke(ctx, e.Ledger, tool, c)
	if err != nil || !again.Replayed || again.ExternalRef != first.ExternalRef || sink.posts.Load() != 1 {
		t.Fatalf("again: %+v %v, posts %d", again, err, sink.posts.Load())
	}
	// The sink gets the downstream key, not the ledger key.
	key := ledger.DownstreamKey(ledger.EffectKey(a.Tenant, a.ID, a.Generation, "notify/on-done", "notify"), "notify")
	if linesWith(t, path, key) != 1 || !strings.HasPrefix(out.String(), "[notify #ops] deploy finished (key al1-") {
		t.Fatalf("file or console wrong; console %q", out.String())
	}
}

// The post lands, the record is lost with the lease: the next attempt
// finds the post by its key and records it without posting again.
func TestNotifyReconcilesLostRecord(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t)
	sink, out, path := newCountingSink(t)
	tool := tools.NewNotify(sink)
	a := e.task()
	c := call(a, "notify/on-done", notifyArgs)

	var b *agentledger.Task
	sink.after = func() error { b = e.ExpireAndReclaim("b"); return nil }
	if _, err := tools.Invoke(ctx, e.Ledger, tool, c); !errors.Is(err, agentledger.ErrLeaseLost) {
		t.Fatalf("a: %v, want ErrLeaseLost", err)
	}
	c.Task = b
	res, err := tools.Invoke(ctx, e.Ledger, tool, c)
	if err != nil || res.Replayed || res.ExternalRef != "notify.jsonl:1" || sink.posts.Load() != 1 {
		t.Fatalf("b: %+v %v, posts %d", res, err, sink.posts.Load())
	}
	key := ledger.DownstreamKey(ledger.EffectKey(a.Tenant, a.ID, a.Generation, "notify/on-done", "notify"), "notify")
	if linesWith(t, path, key) != 1 || strings.Count(out.String(), "\n") != 1 {
		t.Fatalf("posted twice; console %q", out.String())
	}
	j, err := e.Ledger.Journal(ctx, b.ID, b.Generation)
	if err != nil || len(j) != 1 || j[0].State != ledger.StateCompleted || j[0].Result.ExternalRef != "notify.jsonl:1" {
		t.Fatalf("journal %+v %v", j, err)
	}
}

// The lease is lost before the post lands: reconciling finds nothing, so
// the next attempt posts, once.
func TestNotifyPostsWhenReconcileFindsNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t)
	sink, _, path := newCountingSink(t)
	tool := tools.NewNotify(sink)
	a := e.task()
	c := call(a, "notify/on-done", notifyArgs)

	var b *agentledger.Task
	sink.drop = true
	sink.after = func() error { b = e.ExpireAndReclaim("b"); return errors.New("connection reset") }
	if _, err := tools.Invoke(ctx, e.Ledger, tool, c); err == nil {
		t.Fatal("a: the lost post succeeded")
	}
	c.Task = b
	if res, err := tools.Invoke(ctx, e.Ledger, tool, c); err != nil || res.ExternalRef != "notify.jsonl:1" || sink.posts.Load() != 1 {
		t.Fatalf("b: %+v %v, posts %d", res, err, sink.posts.Load())
	}
	key := ledger.DownstreamKey(ledger.EffectKey(a.Tenant, a.ID, a.Generation, "notify/on-done", "notify"), "notify")
	if linesWith(t, path, key) != 1 {
		t.Fatal("not posted exactly once")
	}
}

func TestNotifyBadArgs(t *testing.T) {
	t.Parallel()
	sink, _, _ := newCountingSink(t)
	task := &agentledger.Task{ID: 1, Tenant: "acme", Generation: 1}
	for args, want := range map[string]string{
		`{"text":"x"}`:                       "channel",
		`{"channel":"o ps","text":"x"}`:      "without spaces",
		`{"channel":"ops","text":"  "}`:      "text is empty",
		`{"channel":"ops","text":"x","y":1}`: `unknown field "y"`,
		`"hello"`:                            "arguments must be",
	} {
		_, err := tools.NewNotify(sink).Effect(call(task, "notify/x", args))
		if !isPermanent(err) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", args, err, want)
		}
	}
	if _, err := tools.NewNotify(nil).Effect(call(task, "notify/x", notifyArgs)); !isPermanent(err) {
		t.Errorf("nil sink: %v", err)
	}
	eff, err := tools.NewNotify(sink).Effect(call(task, "notify/x", notifyArgs))
	if err != nil || eff.Class != ledger.Reconcilable || eff.Operation != "notify" || eff.Reconcile == nil {
		t.Fatalf("%+v %v", eff, err)
	}
}
