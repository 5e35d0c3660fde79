package drills_test

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
	"syscall"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/daemon"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/tools"
)

// Environment of a worker process.
const (
	workerEnv     = "DRILL_WORKER_DB"
	downstreamEnv = "DRILL_DOWNSTREAM"
	workerIDEnv   = "DRILL_WORKER_ID"
)

// keyedPost POSTs its args to the downstream with the effect's downstream
// key: a keyed effect.
type keyedPost struct{ url string }

func (keyedPost) Name() string                { return "post" }
func (keyedPost) Description() string         { return "POST to the drill downstream" }
func (keyedPost) Parameters() json.RawMessage { return json.RawMessage(`{"type":"object"}`) }
func (p keyedPost) Effect(c tools.Call) (ledger.Effect, error) {
	return ledger.Effect{Operation: "drill.post", Class: ledger.Keyed, Request: c.Args,
		Perform: func(ctx context.Context, call ledger.Call) (ledger.Result, error) {
			req, err := http.NewRequestWithContext(ctx, "POST", p.url, bytes.NewReader(c.Args))
			if err != nil {
				return ledger.Result{}, err
			}
			req.Header.Set("Idempotency-Key", call.DownstreamKey(p.url))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return ledger.Result{}, err
			}
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			if err != nil {
				return ledger.Result{}, err
			}
			if resp.StatusCode >= 300 {
				return ledger.Result{}, fmt.Errorf("downstream answered %d", resp.StatusCode)
			}
			return ledger.Result{Status: resp.StatusCode, Body: body}, nil
		}}, nil
}

// child creates a child task: a local effect.
type child struct{}

func (child) Name() string                { return "child" }
func (child) Description() string         { return "create a child task" }
func (child) Parameters() json.RawMessage { return json.RawMessage(`{"type":"object"}`) }
func (child) Effect(c tools.Call) (ledger.Effect, error) {
	return ledger.Effect{Operation: "drill.child", Class: ledger.Local, Request: c.Args,
		PerformLocal: func(ctx context.Context, call ledger.Call, db ledger.DB) (ledger.Result, error) {
			r, err := claims.New(db).Enqueue(ctx, claims.EnqueueParams{Tenant: c.Task.Tenant, Queue: "children",
				Kind: "echo", Payload: c.Args, SubmissionKey: "child:" + call.Key})
			if err != nil {
				return ledger.Result{}, err
			}
			return ledger.Result{Body: json.RawMessage(fmt.Sprintf(`{"task_id":%d}`, r.Task.ID))}, nil
		}}, nil
}

// runWorker is a worker process: the embedded daemon (no API, cron,
// janitor or notifications) serving steps tasks with the drill's tools,
// short leases so that killed workers' tasks come back quickly.
func runWorker() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	d := daemon.New(daemon.Config{
		Database: daemon.Database{
			URL:       os.Getenv(workerEnv),
			NoMigrate: true,
			MaxConns:  8,
		},
		Worker: daemon.Worker{
			ID:           os.Getenv(workerIDEnv),
			Concurrency:  8,
			Lease:        2 * time.Second,
			Heartbeat:    500 * time.Millisecond,
			PollInterval: 100 * time.Millisecond,
			Backoff:      agentledger.Backoff{Base: 50 * time.Millisecond, Max: time.Second, Jitter: 0.2},
		},
		Maintenance: daemon.Maintenance{NoCron: true, NoJanitor: true},
		Notify:      daemon.Notifications{NoDispatch: true},
		Logger:      slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})),
	})
	for _, t := range []tools.Tool{keyedPost{url: os.Getenv(downstreamEnv)}, child{}} {
		if err := d.RegisterTool(t); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
	}
	go func() {
		<-d.Ready()
		fmt.Println("ready")
	}()
	if err := d.Run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(0)
}
