package worker

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// SetListenHooks shortens c's LISTEN liveness bound (ping after idle, the
// ping's and the setup's deadlines) and has its session connect through
// connect instead of the pool.
func SetListenHooks(c *Config, idle, pingTimeout, setupTimeout time.Duration, connect func(context.Context) (*pgx.Conn, error)) {
	c.listen = listenHooks{idle: idle, pingTimeout: pingTimeout, setupTimeout: setupTimeout, connect: connect}
}
