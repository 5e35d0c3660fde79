package chaos

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentledger/agentledger/admit"
	"github.com/agentledger/agentledger/agentledgertest/downstream"
	"github.com/agentledger/agentledger/claims"
	agentledgerd "github.com/agentledger/agentledger/daemon"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/tools"
)

// ticketDaemonEnv makes the test binary a daemon of its own with a Go tool
// no agentd has, open_ticket, which POSTs to the downstream the variable
// names under the ledger's key.
const ticketDaemonEnv = "CHAOS_TICKET_DAEMON"

// A mixed fleet (issue 34): three differently configured daemons on one
// database — one embedding agentledger with a Go tool (open_ticket), one
// agentd with an MCP server (shop), one plain agentd allowed to reach a
// downstream — and tasks for each, queued before any daemon is up. Each
// daemon is SIGKILLed once mid-run and started again. Every task is run
// by a daemon that can run it and succeeds; none dies or spends an
// attempt for a capability another daemon has; each effect happens once.
func TestMixedFleet(t *testing.T) {
	skipShort(t)
	t.Parallel()
	const each = 40
	w := newWorld(t)
	ctx := context.Background()
	tickets, api := downstream.New(), downstream.New()
	t.Cleanup(tickets.Close)
	t.Cleanup(api.Close)
	mcpLog := filepath.Join(w.dir, "mcp-calls.log")
	config := filepath.Join(w.dir, "shop.toml")
	must(t, os.WriteFile(config, []byte(sprintf("[[mcp_server]]\nname = \"shop\"\ncommand = [%q, \"-log\", %q]\n", w.mcpcount, mcpLog)), 0o644))

	// Queued before any daemon is up, as for a worker that is not up yet:
	// the door still works out what each needs.
	door := &admit.Door{}
	submit := func(key, payload string) {
		p, err := door.Admit(ctx, w.db, admit.Submission{Caller: admit.Operator, Unserved: true,
			Params: claims.EnqueueParams{Kind: "steps", SubmissionKey: key, Payload: json.RawMessage(payload), MaxAttempts: 5}})
		must(t, err)
		_, err = claims.New(w.db).Enqueue(ctx, p)
		must(t, err)
	}
	for n := range each {
		submit(sprintf("ticket:%d", n), sprintf(`{"steps":[{"tool":"open_ticket","args":{"title":"incident %d"}}]}`, n))
		submit(sprintf("shop:%d", n), sprintf(`{"steps":[{"tool":"shop/reserve","args":{"order":%d}}]}`, n))
		submit(sprintf("api:%d", n), sprintf(`{"steps":[{"tool":"http_request","args":{"method":"POST","url":"%s/effects","body":{"api":%d}}}]}`, api.URL, n))
	}

	self, err := os.Executable()
	must(t, err)
	common := []string{"--listen", "", "--poll-interval", "100ms", "--concurrency", "4", "--lease", "3s"}
	env := func(name string, more ...string) []string {
		return append([]string{"DATABASE_URL=" + w.url, "AGENTLEDGER_STATE_DIR=" + filepath.Join(w.dir, "state-"+name)}, more...)
	}
	daemons := []*daemon{
		{name: "tickets", bin: self, args: []string{"-test.run=^$"}, log: filepath.Join(w.dir, "tickets.log"),
			env: env("tickets", ticketDaemonEnv+"="+tickets.URL)},
		{name: "shop", bin: w.agentd, args: append([]string{"--config", config}, common...), log: filepath.Join(w.dir, "shop.log"),
			env: env("shop")},
		{name: "plain", bin: w.agentd, args: append([]string{"--http-allowed-hosts", api.URL}, common...), log: filepath.Join(w.dir, "plain.log"),
			env: env("plain")},
	}
	for _, d := range daemons {
		must(t, d.start())
	}
	defer stopAll(t, daemons)

	finished := func(min int) func() (bool, string) {
		return func() (bool, string) {
			var done, failed int
			if err := w.db.QueryRow(ctx, `SELECT count(*) FILTER (WHERE state = 'succeeded'),
				count(*) FILTER (WHERE state IN ('dead', 'needs_attention', 'retrying'))
				FROM tasks`).Scan(&done, &failed); err != nil {
				return false, err.Error()
			}
			if failed > 0 {
				t.Fatalf("%d tasks failed or retry", failed)
			}
			return done >= min, sprintf("%d of %d succeeded", done, 3*each)
		}
	}
	// A SIGKILL of each daemon in turn once work is under way, each
	// started again at once (as a supervisor would).
	for i, d := range daemons {
		waitFor(t, "work under way", 2*time.Minute, finished((i+1)*each/2))
		d.kill()
		must(t, d.start())
	}
	waitFor(t, "every task succeeded", 3*time.Minute, finished(3*each))

	// Who ran what: each task's successful attempt was its daemon's, and
	// no attempt of any task failed.
	rows, err := w.db.Query(ctx, `SELECT t.submission_key, a.worker, a.outcome, coalesce(a.error, '')
		FROM attempt_records a JOIN tasks t ON t.id = a.task_id ORDER BY a.task_id, a.lease_token`)
	must(t, err)
	defer rows.Close()
	outcomes := map[string]int{}
	for rows.Next() {
		var key, worker, outcome, why string
		must(t, rows.Scan(&key, &worker, &outcome, &why))
		outcomes[outcome]++
		kind, _, _ := strings.Cut(key, ":")
		want := map[string]string{"ticket": "tickets-", "shop": "shop-", "api": "plain-"}[kind]
		switch outcome {
		case "succeeded", "lease_expired":
			if !strings.HasPrefix(worker, want) {
				t.Errorf("task %s: an attempt (%s) by %s, which cannot run it", key, outcome, worker)
			}
		case "deferred": // a hand-back or a wait: no attempt spent
		default:
			t.Errorf("task %s: attempt by %s ended %s: %s", key, worker, outcome, why)
		}
	}
	must(t, rows.Err())
	t.Logf("attempt records by outcome: %v", outcomes)

	onceEach(t, "tickets", tickets, each)
	onceEach(t, "api", api, each)
	b, err := os.ReadFile(mcpLog)
	must(t, err)
	keys := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		keys[line] = true // "reserve <key>": an idempotent call may be sent again under its key
	}
	if len(keys) != each {
		t.Errorf("the MCP server saw %d reservations, want %d", len(keys), each)
	}
}

// runTicketDaemon is the daemon with open_ticket: the test binary run with
// ticketDaemonEnv, --worker-id as agentd takes it. It runs until SIGTERM
// (or is killed).
func runTicketDaemon() {
	url := os.Getenv(ticketDaemonEnv)
	id := ""
	for i, a := range os.Args {
		if a == "--worker-id" && i+1 < len(os.Args) {
			id = os.Args[i+1]
		}
	}
	type ticket struct {
		Title string `json:"title"`
	}
	open, err := tools.Define(tools.Spec[ticket]{
		Name: "open_ticket", Description: "Open a ticket", Class: ledger.Keyed,
		Perform: func(ctx context.Context, c ledger.Call, tk ticket) (ledger.Result, error) {
			body, _ := json.Marshal(map[string]string{"ticket": tk.Title})
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url+"/effects", bytes.NewReader(body))
			req.Header.Set("Idempotency-Key", c.DownstreamKey("tickets"))
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return ledger.Result{}, err
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			return ledger.Result{Status: resp.StatusCode, Body: b}, nil
		},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	d := agentledgerd.New(agentledgerd.Config{
		Database:    agentledgerd.Database{URL: os.Getenv("DATABASE_URL")},
		Worker:      agentledgerd.Worker{ID: id, PollInterval: 100 * time.Millisecond, Concurrency: 4, Lease: 3 * time.Second},
		Maintenance: agentledgerd.Maintenance{NoCron: true, NoJanitor: true},
		Logger:      slog.New(slog.NewTextHandler(os.Stderr, nil)),
		Stdout:      io.Discard,
	})
	if err := d.RegisterTool(open); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if err := d.RegisterKind(fanOutKind, fanOut); err != nil { // the waits drill's parent
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := d.Run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(0)
}
