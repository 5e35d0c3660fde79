package worker

import (
	"context"
	"os"
	"time"

	"github.com/agentledger/agentledger/claims"
)

// announceInterval is how often a pool refreshes its registration: a
// registration older than a few intervals means the pool is gone.
const announceInterval = 10 * time.Second

// announce registers the pool at once and refreshes the registration until
// ctx ends, so that operators see the pool even while it is idle.
func (p *Pool) announce(ctx context.Context) {
	host, _ := os.Hostname()
	s := claims.New(p.db)
	for {
		var mcp map[string]string
		if p.cfg.MCPStates != nil {
			mcp = p.cfg.MCPStates()
		}
		if err := s.Announce(ctx, p.cfg.ID, host, os.Getpid(), p.cfg.Queues, p.kindNames, mcp); err != nil && ctx.Err() == nil {
			p.log.Debug("announcing the worker failed; it is retried", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(announceInterval):
		}
	}
}

// retire removes the pool's registration as it stops.
func (p *Pool) retire() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := claims.New(p.db).Retire(ctx, p.cfg.ID); err != nil {
		p.log.Debug("removing the worker's registration failed; it goes stale", "err", err)
	}
}
