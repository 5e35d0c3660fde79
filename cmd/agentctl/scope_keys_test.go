package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/internal/test/testdb"
	"github.com/agentledger/agentledger/registry"
)

// scope-keys scopes the downstream keys of the tasks submitted from then
// on, in a database that had tasks when it was migrated (a fresh one is
// scoped from its first task), and refuses while a daemon is live: each
// reads the scope when it starts.
func TestScopeKeys(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := testdb.URL(t)
	db := testdb.Open(t, url)

	code, out, _ := agentctlAt(url, "scope-keys", "--yes")
	if code != 0 || !strings.Contains(out, "downstream keys are scoped already: tasks from 0 on carry installation ") {
		t.Fatalf("a fresh database: exit %d, %q", code, out)
	}

	// As if migrated with tasks in it.
	if _, err := db.Exec(ctx, `UPDATE installation SET keys_scoped_from = NULL`); err != nil {
		t.Fatal(err)
	}
	r, err := claims.New(db).Enqueue(ctx, claims.EnqueueParams{Kind: "echo"})
	if err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := agentctlAt(url, "scope-keys"); code != 2 || !strings.Contains(errOut, "re-run with --yes") {
		t.Fatalf("without --yes: exit %d, %q", code, errOut)
	}
	if err := registry.New(db).Register(ctx, registry.Registration{ID: "w1", Host: "h", PID: 1,
		Queues: []string{"default"}, Kinds: []string{"echo"}}); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := agentctlAt(url, "scope-keys", "--yes")
	if code != 1 || !strings.Contains(errOut, "1 worker pool is live (w1)") {
		t.Fatalf("with a live daemon: exit %d, %q", code, errOut)
	}
	var from *int64
	if err := db.QueryRow(ctx, `SELECT keys_scoped_from FROM installation`).Scan(&from); err != nil || from != nil {
		t.Fatalf("refused, yet scoped from %v (%v)", from, err)
	}
	if _, err := db.Exec(ctx, `DELETE FROM workers`); err != nil {
		t.Fatal(err)
	}
	code, out, _ = agentctlAt(url, "scope-keys", "--yes", "-o", "json")
	var got struct {
		Installation string `json:"installation"`
		From         int64  `json:"scoped_from_task"`
		Already      bool   `json:"already"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &got) != nil || got.Already || got.From <= r.Task.ID || got.Installation == "" {
		t.Fatalf("scoped: exit %d, %s; want scoped after task %d", code, out, r.Task.ID)
	}
	if code, out, _ = agentctlAt(url, "scope-keys", "--yes"); code != 0 || !strings.Contains(out, "scoped already") {
		t.Fatalf("again: exit %d, %q", code, out)
	}

	// Two at once: one scopes, the other finds it done.
	if _, err := db.Exec(ctx, `UPDATE installation SET keys_scoped_from = NULL`); err != nil {
		t.Fatal(err)
	}
	outs := make(chan string, 2)
	for range 2 {
		go func() {
			code, out, errOut := agentctlAt(url, "scope-keys", "--yes")
			outs <- fmt.Sprintf("%d %s%s", code, out, errOut)
		}()
	}
	first, second := <-outs, <-outs
	if scoped := strings.Count(first+second, "0 downstream keys scoped:"); scoped != 1 ||
		strings.Count(first+second, "0 downstream keys are scoped already") != 1 {
		t.Fatalf("two at once:\n%s\n%s", first, second)
	}
}
