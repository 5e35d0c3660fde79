package main

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/internal/test/testdb"
	"github.com/agentledger/agentledger/schedule"
	"github.com/agentledger/agentledger/tenants"
)

// agentd as a service, through its real binary: the API with an
// Idempotency-Key, a signed GitHub webhook delivered twice, a cron
// schedule, health and metrics.
func TestServiceEndToEnd(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := testdb.Empty(t)
	const secret = "hook-s3cret"
	hooks := filepath.Join(t.TempDir(), "hooks.json")
	if err := os.WriteFile(hooks, []byte(`[{"name":"gh","type":"github","secret_env":"GH_SECRET","kind":"echo"}]`), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := agentd(t, []string{"DATABASE_URL=" + url, "GH_SECRET=" + secret}, "--hooks-file", hooks, "--grace", "300ms")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill() //nolint:errcheck // a no-op once it has exited
	var all strings.Builder
	logs := lines(stderr)
	base := ""
	addr := regexp.MustCompile(`addr=(http://127\.0\.0\.1:\d+)`)
	for base == "" {
		l, ok := <-logs
		if !ok {
			t.Fatalf("agentd exited before serving:\n%s", all.String())
		}
		all.WriteString(l + "\n")
		if m := addr.FindStringSubmatch(l); m != nil {
			base = m[1]
		}
	}
	waitLog(t, logs, "worker started")

	db := testdb.Open(t, url)
	ts := tenants.NewStore(db)
	if _, err := ts.CreateTenant(ctx, "acme"); err != nil {
		t.Fatal(err)
	}
	_, token, err := ts.CreateToken(ctx, "acme", "e2e", 0)
	if err != nil {
		t.Fatal(err)
	}
	call := func(method, path, body string, header map[string]string) (*http.Response, []byte) {
		t.Helper()
		req, err := http.NewRequest(method, base+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		for k, v := range header {
			req.Header.Set(k, v)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		if err != nil {
			t.Fatal(err)
		}
		return res, b
	}

	// The API: one task for one key, the second answer replayed.
	auth := map[string]string{"Authorization": "Bearer " + token, "Idempotency-Key": "order-7"}
	first, body := call("POST", "/v1/tasks", `{"kind":"echo","payload":{"order":7}}`, auth)
	again, body2 := call("POST", "/v1/tasks", `{"payload":{"order":7},"kind":"echo"}`, auth)
	if first.StatusCode != 201 || again.StatusCode != 201 || again.Header.Get("Idempotent-Replayed") != "true" || !bytes.Equal(body, body2) {
		t.Fatalf("create: %d %s / replay: %d %q %s", first.StatusCode, body, again.StatusCode, again.Header.Get("Idempotent-Replayed"), body2)
	}
	var task struct{ ID int64 }
	if err := json.Unmarshal(body, &task); err != nil || task.ID == 0 {
		t.Fatalf("task %s: %v", body, err)
	}
	s := claims.New(db)
	waitTask(t, s, task.ID, agentledger.StateSucceeded)

	// A GitHub delivery, signed, then redelivered: one task.
	delivery := `{"action":"opened","number":1}`
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(delivery))
	gh := map[string]string{"X-Hub-Signature-256": "sha256=" + hex.EncodeToString(mac.Sum(nil)),
		"X-GitHub-Delivery": "d-1", "X-GitHub-Event": "pull_request"}
	if res, b := call("POST", "/v1/hooks/gh", delivery, gh); res.StatusCode != 202 {
		t.Fatalf("delivery: %d %s", res.StatusCode, b)
	}
	if res, b := call("POST", "/v1/hooks/gh", delivery, gh); res.StatusCode != 200 || !strings.Contains(string(b), `"duplicate":true`) {
		t.Fatalf("redelivery: %d %s", res.StatusCode, b)
	}
	gh["X-Hub-Signature-256"] = "sha256=00"
	if res, _ := call("POST", "/v1/hooks/gh", delivery, gh); res.StatusCode != 401 {
		t.Fatalf("bad signature: %d", res.StatusCode)
	}

	// A cron schedule fires within a few seconds.
	if _, err := schedule.NewStore(db).Add(ctx, schedule.Schedule{Name: "tick", Spec: "@every 1s", Kind: "noop"}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		var n int
		if err := db.QueryRow(ctx, `SELECT count(*) FROM tasks WHERE submission_key LIKE 'cron:tick:%'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the schedule did not fire in 30s")
		}
		time.Sleep(50 * time.Millisecond) // polling a condition in another process
	}

	if res, b := call("GET", "/healthz", "", nil); res.StatusCode != 200 {
		t.Fatalf("healthz: %d %s", res.StatusCode, b)
	}
	if res, b := call("GET", "/readyz", "", nil); res.StatusCode != 200 || !strings.Contains(string(b), "ready") {
		t.Fatalf("readyz: %d %s", res.StatusCode, b)
	}
	res, metrics := call("GET", "/metrics", "", nil)
	for _, want := range []string{
		`agentledger_http_requests_total{route="POST /v1/tasks",status="201"} 2`,
		`agentledger_webhook_deliveries_total{outcome="duplicate",source="gh"} 1`,
		`agentledger_tasks{state="succeeded"}`,
		`agentledger_cron_fires_total{catch_up="false",schedule="tick"}`,
		`agentledger_attempts_total{kind="echo",state="succeeded"}`,
		`agentledger_database_up 1`,
	} {
		if res.StatusCode != 200 || !strings.Contains(string(metrics), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	for l := range logs {
		all.WriteString(l + "\n")
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("agentd exited with %v after SIGTERM, want 0", err)
	}
	for _, secret := range []string{token, secret} {
		if strings.Contains(all.String(), secret) {
			t.Fatal("a secret shows in agentd's logs")
		}
	}
}
