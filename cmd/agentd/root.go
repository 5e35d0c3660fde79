package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/cobra"

	"github.com/agentledger/agentledger/daemon"
	"github.com/agentledger/agentledger/internal/cliflags"
	"github.com/agentledger/agentledger/internal/demo"
	"github.com/agentledger/agentledger/internal/version"
	"github.com/agentledger/agentledger/tracing"
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
			cfg.Model.APIKey = getenv("AGENTLEDGER_LLM_API_KEY")
			cfg.Notify.SlackToken = getenv("AGENTLEDGER_SLACK_TOKEN")
			if cfg.Notify.SlackToken != "" && cfg.Notify.SlackTokenFile != "" {
				return &usageError{fmt.Errorf("both AGENTLEDGER_SLACK_TOKEN and --slack-token-file are set: keep one")}
			}
			cfg.Notify.Approvals.SigningSecret = getenv("AGENTLEDGER_SLACK_SIGNING_SECRET")
			if cfg.Notify.Approvals.SigningSecret != "" && cfg.Notify.Approvals.SigningSecretFile != "" {
				return &usageError{fmt.Errorf("both AGENTLEDGER_SLACK_SIGNING_SECRET and --slack-signing-secret-file are set: keep one")}
			}
			return run(cmd.Context(), cfg, hurry)
		},
	}
	cmd.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error { return &usageError{cliflags.Suggest(cmd, err)} })
	register(cmd.Flags(), getenv)
	return cmd
}

// run starts the daemon and blocks until ctx ends and shutdown is complete.
func run(ctx context.Context, cfg *config, hurry <-chan struct{}) error {
	log := newLogger(os.Stderr, cfg.LogLevel, cfg.LogFormat)
	slog.SetDefault(log)
	cfg.Logger = log
	flush, err := tracing.Setup(ctx, "agentd")
	if err != nil {
		return err
	}
	defer func() {
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := flush(fctx); err != nil {
			log.Warn("tracing: flushing spans at shutdown failed", "err", err)
		}
	}()
	if cfg.Demo {
		if err := demoConfig(cfg); err != nil {
			return err
		}
	}
	d := daemon.New(cfg.Config)
	if cfg.Demo {
		// The demo's tasks call the demo API on this daemon's listener.
		for pattern, h := range demo.NewServer().Routes() {
			if err := d.Handle(pattern, h); err != nil {
				return err
			}
		}
	}
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-hurry:
			log.Info("second signal: ending the grace period")
			d.EndGrace()
		case <-done:
		}
	}()
	return d.Run(ctx)
}

// demoConfig binds the listener the demo's tasks call, allows its host to
// the HTTP tools, and seeds the demo before the first claim.
func demoConfig(cfg *config) error {
	if cfg.API.Listen == "" {
		return &usageError{fmt.Errorf("--demo needs the HTTP server: set --listen")}
	}
	ln, err := daemon.Listen(cfg.API.Listen)
	if err != nil {
		return err
	}
	host := ln.Addr().String()
	cfg.API.Listener = ln
	cfg.HTTPTools.AllowedHosts = append(cfg.HTTPTools.AllowedHosts, "http://"+host)
	cfg.HTTPTools.UnsafeAllowedHosts = append(cfg.HTTPTools.UnsafeAllowedHosts, "http://"+host)
	cfg.Hooks.BeforeRun = func(ctx context.Context, db *pgxpool.Pool) error {
		seeded, err := demo.Seed(ctx, db, "http://"+host)
		if err != nil {
			return fmt.Errorf("seeding the demo: %w", err)
		}
		printDemo(os.Stdout, seeded, host, agentctlLine(cfg.Database.StateDir, cfg.Database.URL))
		return nil
	}
	return nil
}
