package claims_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/internal/test/testdb"
)

func TestEnqueueDefaults(t *testing.T) {
	t.Parallel()
	s := pinnedStore(t, newClock())
	task := enqueue(t, s, claims.EnqueueParams{Kind: "echo", Payload: raw(`{"msg":"hi"}`)})
	if task.Tenant != "default" || task.Queue != "default" || task.State != agentledger.StateQueued ||
		task.MaxAttempts != 25 || task.Generation != 1 || task.Attempt != 0 || task.LeaseToken != 0 {
		t.Fatalf("unexpected task: %+v", task)
	}
	if string(task.Payload) != `{"msg": "hi"}` {
		t.Fatalf("payload = %s", task.Payload)
	}
}

func TestEnqueueRejectsBadInputAndStoresNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := claims.New(testdb.New(t))
	bad := []claims.EnqueueParams{
		{},
		{Kind: "has space"},
		{Kind: "noop", Payload: raw(`{"a":`)},
		{Kind: "noop", Priority: 101},
		{Kind: "noop", MaxAttempts: -1},
		{Kind: "noop", Queue: "q/1"},
		{Kind: "noop", SubmissionKey: "tab\tkey"},
		{Kind: "noop", Payload: raw(`"` + strings.Repeat("x", claims.MaxPayload-1) + `"`)}, // one byte over
	}
	for _, p := range bad {
		if _, err := s.Enqueue(ctx, p); !errors.Is(err, agentledger.ErrInvalid) {
			t.Errorf("Enqueue(%.200v) error = %v, want ErrInvalid", p, err)
		}
	}
	// A bad task anywhere in a batch rejects the whole batch.
	if _, err := s.EnqueueBatch(ctx, []claims.EnqueueParams{{Kind: "ok"}, {Kind: ""}}); !errors.Is(err, agentledger.ErrInvalid) {
		t.Errorf("batch error = %v, want ErrInvalid", err)
	}
	if got, _ := s.List(ctx, claims.ListParams{}); len(got) != 0 {
		t.Fatalf("%d tasks stored after rejected input", len(got))
	}
	// A payload of MaxPayload bytes is taken.
	if _, err := s.Enqueue(ctx, claims.EnqueueParams{Kind: "noop", Payload: raw(`"` + strings.Repeat("x", claims.MaxPayload-2) + `"`)}); err != nil {
		t.Errorf("a payload of MaxPayload bytes: %v", err)
	}
}

// 50 concurrent submissions with one key make exactly one task (I6: the
// unique index decides, not a look-up).
func TestEnqueueSameKeyConcurrently(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := claims.New(testdb.New(t))
	p := claims.EnqueueParams{Kind: "echo", Payload: raw(`{"n":1,"m":[1,2]}`), SubmissionKey: "order-42"}

	const n = 50
	var wg sync.WaitGroup
	start := make(chan struct{})
	results := make([]claims.EnqueueResult, n)
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			q := p
			if i%2 == 1 { // same meaning, other spelling
				q.Payload = raw(`{ "m": [1, 2], "n": 1 }`)
			}
			results[i], errs[i] = s.Enqueue(ctx, q)
		}()
	}
	close(start)
	wg.Wait()

	created := 0
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("enqueue %d: %v", i, errs[i])
		}
		if results[i].Task.ID != results[0].Task.ID {
			t.Fatalf("enqueue %d made task %d, another made %d", i, results[i].Task.ID, results[0].Task.ID)
		}
		if !results[i].Duplicate {
			created++
		}
	}
	if created != 1 {
		t.Fatalf("%d submissions reported creating the task, want 1", created)
	}
	all, _ := s.List(ctx, claims.ListParams{})
	if len(all) != 1 {
		t.Fatalf("%d tasks stored, want 1", len(all))
	}

	// A retry whose run time is relative to its own clock is the same
	// submission: run_at is scheduling, not identity.
	retry := p
	retry.RunAt = time.Now().Add(5 * time.Minute)
	if r, err := s.Enqueue(ctx, retry); err != nil || !r.Duplicate {
		t.Fatalf("retry with another run_at: %v, duplicate=%v", err, r.Duplicate)
	}

	p.Payload = raw(`{"n":2}`)
	if _, err := s.Enqueue(ctx, p); !errors.Is(err, agentledger.ErrKeyReuse) {
		t.Fatalf("different payload, same key: error = %v, want ErrKeyReuse", err)
	}
	// The same key in another tenant is another submission.
	p.Tenant = "acme"
	if r, err := s.Enqueue(ctx, p); err != nil || r.Duplicate {
		t.Fatalf("other tenant: %v, duplicate=%v", err, r.Duplicate)
	}
}

func TestEnqueueBatch(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := claims.New(testdb.New(t))
	first := enqueue(t, s, claims.EnqueueParams{Kind: "a", SubmissionKey: "k1"})
	res, err := s.EnqueueBatch(ctx, []claims.EnqueueParams{
		{Kind: "a", SubmissionKey: "k1"}, // existed before
		{Kind: "b"},
		{Kind: "c", SubmissionKey: "k2"},
		{Kind: "c", SubmissionKey: "k2"}, // repeated within the batch
		{Kind: "d"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if !res[0].Duplicate || res[0].Task.ID != first.ID {
		t.Errorf("res[0] = %+v, want duplicate of %d", res[0], first.ID)
	}
	if res[1].Duplicate || res[1].Task.Kind != "b" || res[4].Task.Kind != "d" {
		t.Errorf("unkeyed results out of order: %+v %+v", res[1].Task, res[4].Task)
	}
	if res[2].Duplicate || !res[3].Duplicate || res[2].Task.ID != res[3].Task.ID {
		t.Errorf("in-batch repeat: %+v / %+v", res[2], res[3])
	}
	// Key reuse anywhere rolls the whole batch back.
	_, err = s.EnqueueBatch(ctx, []claims.EnqueueParams{{Kind: "e"}, {Kind: "other", SubmissionKey: "k1"}})
	if !errors.Is(err, agentledger.ErrKeyReuse) {
		t.Fatalf("error = %v, want ErrKeyReuse", err)
	}
	all, _ := s.List(ctx, claims.ListParams{Kind: "e"})
	if len(all) != 0 {
		t.Fatalf("task of a rejected batch was stored")
	}
}

// A payload PostgreSQL could not store, or that is not UTF-8, is refused as
// invalid input before any statement, not as a database error.
func TestPayloadsJSONBCannotHold(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		payload string
		bad     bool
	}{
		{`{"a":"x\u0000y"}`, true},
		{`{"a\u0000":1}`, true},
		{`{"a":"\\u0000"}`, false}, // a backslash and "u0000"
		{"{\"a\":\"caf\xe9\"}", true},
		{`{"a":"café"}`, false},
	} {
		p := claims.EnqueueParams{Kind: "echo", Payload: json.RawMessage(tc.payload)}
		err := p.Validate()
		if tc.bad != errors.Is(err, agentledger.ErrInvalid) {
			t.Errorf("%q: %v", tc.payload, err)
		}
	}
}
