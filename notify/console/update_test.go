package console_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/notify"
	"github.com/agentledger/agentledger/notify/console"
)

// fileRecord is what the tests read of a line of the console file.
type fileRecord struct {
	Key      *string        `json:"key"`
	UpdateOf string         `json:"update_of"`
	Channel  string         `json:"channel"`
	Text     string         `json:"text"`
	Title    string         `json:"title"`
	Fields   []notify.Field `json:"fields"`
	Ref      *string        `json:"ref"`
	Time     time.Time      `json:"time"`
}

func records(t *testing.T, path string) []fileRecord {
	t.Helper()
	var out []fileRecord
	for _, l := range lines(t, path) {
		var r fileRecord
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		out = append(out, r)
	}
	return out
}

func TestConsoleSinkUpdate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, out, path := newSink(t)
	key := "al1-0123456789abcdef0123456789"
	ref, err := s.Post(ctx, key, notify.Message{Channel: "ops", Title: "Task 42 running", Text: "attempt 1",
		Fields: []notify.Field{{Label: "Task", Value: "42"}, {Label: "State", Value: "running"}}, Footer: "not shown"})
	if err != nil || ref != "notify.jsonl:1" {
		t.Fatalf("post: %q %v", ref, err)
	}
	if got := out.String(); got != "[notify #ops] Task 42 running — attempt 1 [task=42 state=running] (key al1-0123456789ab…)\n" {
		t.Fatalf("console %q", got)
	}
	out.Reset()

	up := notify.Message{Channel: "elsewhere", Title: "Task 42 succeeded", Text: "all rows\nloaded",
		Fields: []notify.Field{{Label: "Task", Value: "42"}, {Label: "State", Value: "succeeded"}, {Label: "Run time", Value: "3 min"}}}
	if err := s.Update(ctx, ref, up); err != nil {
		t.Fatal(err)
	}
	if got, want := out.String(), "[notify #ops] (edit of notify.jsonl:1) Task 42 succeeded — all rows\n    loaded [task=42 state=succeeded run_time=\"3 min\"]\n"; got != want {
		t.Fatalf("console %q, want %q", got, want)
	}
	recs := records(t, path)
	if len(recs) != 2 || recs[0].Key == nil || *recs[0].Key != key || recs[0].Title != "Task 42 running" || len(recs[0].Fields) != 2 {
		t.Fatalf("post record %+v", recs)
	}
	u := recs[1]
	if u.Key != nil || u.Ref != nil || u.UpdateOf != ref || u.Channel != "ops" || u.Text != "all rows\nloaded" ||
		u.Title != "Task 42 succeeded" || len(u.Fields) != 3 || u.Fields[2] != (notify.Field{Label: "Run time", Value: "3 min"}) ||
		time.Since(u.Time) > time.Minute {
		t.Fatalf("update record %+v", u)
	}
	if l := lines(t, path)[1]; !strings.Contains(l, `"update_of":"notify.jsonl:1"`) || strings.Contains(l, `"key"`) {
		t.Fatalf("update line %s", l)
	}

	// Find is not confused by the update, and ignores since.
	for _, since := range []time.Time{{}, time.Now().Add(time.Hour)} {
		if got, found, err := s.Find(ctx, key, notify.Message{}, since); !found || err != nil || got != ref {
			t.Fatalf("find since %v: %q %v %v", since, got, found, err)
		}
	}
	// The update took a line: the next post is on line 3. A second
	// update appends again.
	if r2, err := s.Post(ctx, "k2", notify.Message{Channel: "ops", Text: "x"}); err != nil || r2 != "notify.jsonl:3" {
		t.Fatalf("post after update: %q %v", r2, err)
	}
	if err := s.Update(ctx, ref, notify.Message{Text: "again"}); err != nil || len(lines(t, path)) != 4 {
		t.Fatalf("second update: %v", err)
	}

	// Another process (sink) on the file updates the post too.
	other, err := console.New(nil, path)
	if err != nil {
		t.Fatal(err)
	}
	if err := other.Update(ctx, ref, notify.Message{Text: "from b"}); err != nil {
		t.Fatalf("other update: %v", err)
	}
}

func TestConsoleSinkUpdateGone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, out, path := newSink(t)
	ref, err := s.Post(ctx, "k1", notify.Message{Channel: "ops", Text: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Update(ctx, ref, notify.Message{Text: "y"}); err != nil {
		t.Fatal(err)
	}
	printed, written := out.String(), len(lines(t, path))
	for _, bad := range []string{"notify.jsonl:2", "notify.jsonl:9", "other.jsonl:1", "", "C1/1.000001"} {
		err := s.Update(ctx, bad, notify.Message{Text: "z"})
		if !errors.Is(err, notify.ErrMessageGone) || !isPermanent(err) {
			t.Fatalf("update of %q: %v", bad, err)
		}
	}
	if out.String() != printed || len(lines(t, path)) != written {
		t.Fatal("a failed update wrote something")
	}
	// Once the file is truncated, its old posts are gone.
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := s.Update(ctx, ref, notify.Message{Text: "z"}); !errors.Is(err, notify.ErrMessageGone) {
		t.Fatalf("update after truncation: %v", err)
	}
}

// A file written before titles and updates existed still reads: its
// posts are found and can be updated.
func TestConsoleSinkOldRecords(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, out, path := newSink(t)
	old := `{"key":"k0","channel":"ops","text":"old","ref":"notify.jsonl:1","time":"2024-05-01T10:00:00Z"}` + "\n"
	if err := os.WriteFile(path, []byte(old), 0o600); err != nil {
		t.Fatal(err)
	}
	if ref, found, err := s.Find(ctx, "k0", notify.Message{}, time.Time{}); !found || err != nil || ref != "notify.jsonl:1" {
		t.Fatalf("find: %q %v %v", ref, found, err)
	}
	if err := s.Update(ctx, "notify.jsonl:1", notify.Message{Text: "new"}); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); got != "[notify #ops] (edit of notify.jsonl:1) new\n" {
		t.Fatalf("console %q", got)
	}
	if ref, err := s.Post(ctx, "k1", notify.Message{Channel: "ops", Text: "x"}); err != nil || ref != "notify.jsonl:3" {
		t.Fatalf("post: %q %v", ref, err)
	}
}

// Posts and updates from many sinks on one file, as from several daemons:
// each key is posted once, on the line its ref names, and every update
// record edits a post. The file lock keeps their refs apart.
func TestConsoleSinkConcurrentPostsUpdates(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, _, path := newSink(t)
	const keys, workers = 10, 8
	var wg sync.WaitGroup
	for g := range workers {
		s, err := console.New(nil, path)
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			for i := range keys {
				k := fmt.Sprintf("k%d", (i+g)%keys)
				ref, err := s.Post(ctx, k, notify.Message{Channel: "ops", Text: "t"})
				if err != nil {
					t.Error(err)
					return
				}
				if err := s.Update(ctx, ref, notify.Message{Title: k, Text: fmt.Sprint(g)}); err != nil {
					t.Error(err)
				}
				if got, found, err := s.Find(ctx, k, notify.Message{}, time.Time{}); !found || err != nil || got != ref {
					t.Errorf("find %s: %q %v %v, posted %q", k, got, found, err, ref)
				}
			}
		})
	}
	wg.Wait()
	posts, updates := map[string]string{}, 0 // ref → key
	for i, r := range records(t, path) {
		switch {
		case r.Key != nil:
			if *r.Ref != fmt.Sprintf("notify.jsonl:%d", i+1) {
				t.Fatalf("line %d has ref %s", i+1, *r.Ref)
			}
			posts[*r.Ref] = *r.Key
		case r.UpdateOf != "":
			updates++
			if k, ok := posts[r.UpdateOf]; !ok || k != r.Title {
				t.Fatalf("line %d updates %s (%q), not a post of %s", i+1, r.UpdateOf, k, r.Title)
			}
		default:
			t.Fatalf("line %d: %+v", i+1, r)
		}
	}
	if len(posts) != keys || updates != keys*workers {
		t.Fatalf("%d posts, %d updates", len(posts), updates)
	}
}

func isPermanent(err error) bool {
	var p *agentledger.PermanentError
	return errors.As(err, &p)
}
