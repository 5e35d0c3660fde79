package console_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentledger/agentledger/notify"
	"github.com/agentledger/agentledger/notify/console"
)

func newSink(t *testing.T) (*console.Sink, *bytes.Buffer, string) {
	t.Helper()
	var out bytes.Buffer
	path := filepath.Join(t.TempDir(), "notify.jsonl")
	s, err := console.New(&out, path)
	if err != nil {
		t.Fatal(err)
	}
	return s, &out, path
}

func lines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

func TestConsoleSinkPostFind(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, out, path := newSink(t)
	key := "al1-0123456789abcdef0123456789"

	if _, found, err := s.Find(ctx, key, notify.Message{}, time.Time{}); found || err != nil {
		t.Fatalf("find before post: %v %v", found, err)
	}
	ref, err := s.Post(ctx, key, notify.Message{Channel: "ops", Text: "deploy done"})
	if err != nil || ref != "notify.jsonl:1" {
		t.Fatalf("post: %q %v", ref, err)
	}
	if got := out.String(); got != "[notify #ops] deploy done (key al1-0123456789ab…)\n" {
		t.Fatalf("console %q", got)
	}
	if got, found, err := s.Find(ctx, key, notify.Message{}, time.Time{}); !found || err != nil || got != ref {
		t.Fatalf("find: %q %v %v", got, found, err)
	}
	// Idempotent per key: the first ref, nothing written.
	again, err := s.Post(ctx, key, notify.Message{Channel: "#ops", Text: "deploy done"})
	if err != nil || again != ref || strings.Count(out.String(), "\n") != 1 || len(lines(t, path)) != 1 {
		t.Fatalf("again: %q %v, console %q", again, err, out.String())
	}
	other, err := s.Post(ctx, "k2", notify.Message{Channel: "#ops", Text: "two\nlines"})
	if err != nil || other != "notify.jsonl:2" || !strings.Contains(out.String(), "[notify #ops] two\n    lines (key k2)") {
		t.Fatalf("other: %q %v, console %q", other, err, out.String())
	}
	if l := lines(t, path); len(l) != 2 || !strings.Contains(l[0], `"key":"`+key+`"`) ||
		!strings.Contains(l[0], `"channel":"ops"`) || !strings.Contains(l[0], `"text":"deploy done"`) ||
		!strings.Contains(l[0], `"ref":"notify.jsonl:1"`) || !strings.Contains(l[0], `"time":"`) {
		t.Fatalf("file %q", l)
	}
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v %v", st.Mode(), err)
	}
}

// Another process (another sink on the same file) finds what this one
// posted, and does not post it again.
func TestConsoleSinkSharedFile(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a, _, path := newSink(t)
	if _, err := a.Post(ctx, "k1", notify.Message{Channel: "ops", Text: "x"}); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	b, err := console.New(&out, path)
	if err != nil {
		t.Fatal(err)
	}
	if ref, found, err := b.Find(ctx, "k1", notify.Message{}, time.Time{}); !found || err != nil || ref != "notify.jsonl:1" {
		t.Fatalf("b find: %q %v %v", ref, found, err)
	}
	if ref, err := b.Post(ctx, "k1", notify.Message{Channel: "ops", Text: "x"}); err != nil || ref != "notify.jsonl:1" || out.Len() != 0 {
		t.Fatalf("b post: %q %v", ref, err)
	}
	if _, err := b.Post(ctx, "k2", notify.Message{Channel: "ops", Text: "y"}); err != nil {
		t.Fatal(err)
	}
	if ref, found, _ := a.Find(ctx, "k2", notify.Message{}, time.Time{}); !found || ref != "notify.jsonl:2" {
		t.Fatalf("a find k2: %q %v", ref, found)
	}
}

func TestConsoleSinkConcurrentPosts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _, path := newSink(t)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 20 {
				if _, err := s.Post(ctx, fmt.Sprintf("k%d", (i+g)%20), notify.Message{Channel: "ops", Text: "t"}); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	seen := map[string]int{}
	for _, l := range lines(t, path) {
		seen[l[strings.Index(l, `"key":`):strings.Index(l, `,"channel"`)]]++
	}
	if len(seen) != 20 {
		t.Fatalf("%d keys: %v", len(seen), seen)
	}
	for k, n := range seen {
		if n != 1 {
			t.Fatalf("%s written %d times", k, n)
		}
	}
}

// A torn last line (a crash mid-write) is skipped, and the next record does
// not glue onto it.
func TestConsoleSinkTornLine(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _, path := newSink(t)
	if err := os.WriteFile(path, []byte(`{"key":"k0","chan`), 0o600); err != nil {
		t.Fatal(err)
	}
	ref, err := s.Post(ctx, "k1", notify.Message{Channel: "ops", Text: "x"})
	if err != nil || ref != "notify.jsonl:2" {
		t.Fatalf("post: %q %v", ref, err)
	}
	if got, found, _ := s.Find(ctx, "k1", notify.Message{}, time.Time{}); !found || got != ref {
		t.Fatalf("find: %q %v", got, found)
	}
	if _, found, _ := s.Find(ctx, "k0", notify.Message{}, time.Time{}); found {
		t.Fatal("torn record found")
	}
	// Truncation is noticed: the index starts over.
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, found, _ := s.Find(ctx, "k1", notify.Message{}, time.Time{}); found {
		t.Fatal("found a record of a truncated file")
	}
}

func TestConsoleSinkErrors(t *testing.T) {
	t.Parallel()
	if _, err := console.New(nil, ""); err == nil {
		t.Fatal("no path accepted")
	}
	if _, err := console.New(nil, filepath.Join(t.TempDir(), "missing", "f")); err == nil {
		t.Fatal("unwritable path accepted")
	}
	s, _, _ := newSink(t)
	if _, err := s.Post(context.Background(), "", notify.Message{}); err == nil {
		t.Fatal("empty key accepted")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Post(ctx, "k", notify.Message{}); err == nil {
		t.Fatal("cancelled post went through")
	}
	if _, _, err := s.Find(ctx, "k", notify.Message{}, time.Time{}); err == nil {
		t.Fatal("cancelled find went through")
	}
	if err := s.Update(ctx, "notify.jsonl:1", notify.Message{}); err == nil || errors.Is(err, notify.ErrMessageGone) {
		t.Fatalf("cancelled update: %v", err)
	}
}
