package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"time"

	"github.com/agentledger/agentledger/internal/version"

	"github.com/spf13/cobra"

	"github.com/agentledger/agentledger/database"
	"github.com/agentledger/agentledger/internal/demo"
	"github.com/agentledger/agentledger/metrics"
	"github.com/agentledger/agentledger/migrations"
	"github.com/agentledger/agentledger/worker"
)

// newRootCmd builds the command; closing hurry during a shutdown ends its
// grace period.
func newRootCmd(getenv func(string) string, hurry <-chan struct{}) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "agentd",
		Version: version.String(),
		Short:   "Run agentledger workers against PostgreSQL",
		Long: `agentd claims tasks from PostgreSQL and runs them so that no replay,
re-poll, crash or retry produces a second business effect.

Every flag can also be set by the environment variable named in its help.
With no --database-url, agentd starts (or joins) a private PostgreSQL cluster
from the server binaries installed on this machine.`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 0 {
				return &usageError{fmt.Errorf("unexpected argument %q: agentd takes only flags (see --help)", args[0])}
			}
			return nil
		},
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := parse(cmd.Flags(), getenv)
			if err != nil {
				return err
			}
			cfg.LLMAPIKey = getenv("AGENTLEDGER_LLM_API_KEY")
			cfg.SlackToken = getenv("AGENTLEDGER_SLACK_TOKEN")
			if cfg.SlackToken != "" && cfg.SlackTokenFile != "" {
				return &usageError{fmt.Errorf("both AGENTLEDGER_SLACK_TOKEN and --slack-token-file are set: keep one")}
			}
			return run(cmd.Context(), cfg, hurry)
		},
	}
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &usageError{err} })
	register(cmd.Flags(), getenv)
	return cmd
}

// run starts the daemon and blocks until ctx ends and shutdown is complete.
func run(ctx context.Context, cfg *config, hurry <-chan struct{}) error {
	log := newLogger(cfg)
	slog.SetDefault(log)

	db, err := database.Open(ctx, database.Config{URL: cfg.DatabaseURL, StateDir: cfg.StateDir, MaxConns: cfg.MaxConns,
		Pooler: cfg.PgBouncer, Logger: log})
	if err != nil {
		return err
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := db.Close(ctx); err != nil {
			log.Error("closing the database", "err", err)
		}
	}()
	log.Info("connected", "database", db.String())

	if err := migrate(ctx, db, cfg, log); err != nil {
		return err
	}
	ln, err := listen(cfg)
	if err != nil {
		return err
	}
	var demoAPI *demo.Server
	if cfg.Demo {
		if ln == nil {
			return &usageError{fmt.Errorf("--demo needs the HTTP server: set --listen")}
		}
		// The demo's tasks call the demo API on this daemon's listener.
		demoAPI = demo.NewServer()
		host := ln.Addr().String()
		cfg.HTTPAllowedHosts = append(cfg.HTTPAllowedHosts, host)
		cfg.UnsafeHTTPAllowedHosts = append(cfg.UnsafeHTTPAllowedHosts, host)
	}
	m := metrics.New()
	kinds, err := handlers(cfg, db.Pool, m)
	if err != nil {
		return err
	}
	if cfg.LLMBaseURL == "" {
		log.Info("agent tasks: no model endpoint (set AGENTLEDGER_LLM_BASE_URL); steps tasks run without one")
	} else {
		log.Info("agent tasks: model endpoint configured", "base_url", database.Redact(cfg.LLMBaseURL), "model", cfg.LLMModel,
			"api_key_set", cfg.LLMAPIKey != "")
	}
	pool, err := worker.New(db.Pool, worker.Config{
		ID: cfg.WorkerID, Queues: cfg.Queues, Concurrency: cfg.Concurrency, BatchSize: cfg.BatchSize,
		Lease: cfg.Lease, HeartbeatInterval: cfg.Heartbeat, PollInterval: cfg.PollInterval,
		PollOnly: cfg.PollOnly, Grace: cfg.Grace, Handlers: kinds, Logger: log, Observer: m.Worker(),
	})
	if err != nil {
		return &usageError{err}
	}
	var extra map[string]http.Handler
	if demoAPI != nil {
		extra = demoAPI.Routes()
	}
	svc, err := buildServices(cfg, db.Pool, m, pool.ID(), ln, extra, log)
	if err != nil {
		return err
	}
	if demoAPI != nil {
		seeded, err := demo.Seed(ctx, db.Pool, "http://"+ln.Addr().String())
		if err != nil {
			return fmt.Errorf("seeding the demo: %w", err)
		}
		printDemo(os.Stdout, seeded, ln.Addr().String())
	}
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-hurry:
			log.Info("second signal: ending the grace period")
			pool.EndGrace()
		case <-done:
		}
	}()
	// The services stop with the pool: at a signal, or when the pool
	// fails.
	sctx, stop := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- svc.run(sctx) }()
	err = pool.Run(ctx)
	stop()
	if serr := <-served; err == nil {
		err = serr
	}
	return err
}

// migrate applies pending migrations, or with --no-migrate refuses to run
// on a schema older than this binary.
func migrate(ctx context.Context, db *database.DB, cfg *config, log *slog.Logger) error {
	m, err := migrations.New(db.Pool, nil)
	if err != nil {
		return err
	}
	defer m.Close()
	if cfg.NoMigrate {
		v, err := m.Version(ctx)
		if err != nil {
			return err
		}
		if v < m.Latest() {
			return fmt.Errorf("schema is at version %d, this agentd needs %d: run `agentctl migrate up` or start without --no-migrate", v, m.Latest())
		}
		return nil
	}
	applied, err := m.Up(ctx)
	if err != nil {
		return err
	}
	if len(applied) > 0 {
		log.Info("applied migrations", "versions", applied)
	}
	return nil
}

func newLogger(cfg *config) *slog.Logger {
	opts := &slog.HandlerOptions{Level: cfg.LogLevel}
	if cfg.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(os.Stderr, opts))
	}
	return slog.New(slog.NewTextHandler(os.Stderr, opts))
}
