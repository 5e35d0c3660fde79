// Command agentd is the agentledger daemon: it migrates the schema, then
// claims and runs tasks from PostgreSQL until SIGINT or SIGTERM, when it
// stops claiming, lets running tasks finish within the grace period and
// releases the rest for other daemons.
//
// With no DATABASE_URL it starts (or joins) a private PostgreSQL cluster from
// the server binaries installed on the machine, in the state directory.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/agentledger/agentledger/daemon"
	"github.com/agentledger/agentledger/internal/cliflags"
)

func main() {
	// agentd's environment holds secrets (the model's key, the Slack token,
	// the database URL): no process of its user, the MCP servers it starts
	// among them, may read them from /proc/<pid>/environ.
	if err := daemon.HideEnvironment(); err != nil {
		fmt.Fprintf(os.Stderr, "agentd: warning: processes of this user can read agentd's environment: %v\n", err)
	}
	// Output to a pipe whose reader is gone (agentd | tee log, after a
	// Ctrl-C ended tee too) must not kill the daemon mid-shutdown: with
	// SIGPIPE handled, such a write fails with EPIPE instead (os/signal).
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	// The first SIGINT/SIGTERM starts a graceful shutdown; a second one
	// cuts its grace period short. A hang-up (its terminal or tmux session
	// closed) shuts down the same way: its default action would kill agentd
	// at once and leave its embedded PostgreSQL running.
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	hurry := make(chan struct{})
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	go func() {
		<-sigs
		stop()
		<-sigs
		close(hurry)
	}()
	if err := newRootCmd(os.Getenv, hurry).ExecuteContext(ctx); err != nil {
		fmt.Fprintf(os.Stderr, "agentd: %s\n", strings.TrimRight(agentdNames(err.Error()), "\n"))
		if errors.As(err, new(*cliflags.Error)) {
			fmt.Fprintln(os.Stderr, "\nRun 'agentd --help' for usage.")
		}
		var u *usageError
		if errors.As(err, &u) || errors.As(err, new(*daemon.ConfigError)) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}
