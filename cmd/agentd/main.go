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
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := newRootCmd(os.Getenv).ExecuteContext(ctx); err != nil {
		fmt.Fprintf(os.Stderr, "agentd: %v\n", err)
		var u *usageError
		if errors.As(err, &u) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}
