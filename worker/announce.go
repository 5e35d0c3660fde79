package worker

import (
	"context"
	"os"
	"time"

	"github.com/agentledger/agentledger/registry"
)

// announceInterval is how often a pool refreshes its registration: one
// not refreshed for registry.LiveWithin means the pool is gone (and the
// submit check no longer counts it); after registry.PruneAfter it is pruned.
const announceInterval = 10 * time.Second

// Announce registers the pool (what it claims, the tools it serves with
// their parameter schemas, its MCP servers' states) before Run, so that tasks of its kinds are accepted
// from the start; Run refreshes the registration and removes it when it
// returns. A pool that will not Run after all is removed with Retire.
func (p *Pool) Announce(ctx context.Context) error {
	return registry.New(p.db).Register(ctx, p.registration())
}

// registration is what the pool announces now.
func (p *Pool) registration() registry.Registration {
	host, _ := os.Hostname()
	r := registry.Registration{ID: p.cfg.ID, Host: host, PID: os.Getpid(),
		Queues: p.cfg.Queues, Kinds: p.kindNames, KindSchemas: p.cfg.KindSchemas}
	if p.cfg.MCPStates != nil {
		r.MCPServers = p.cfg.MCPStates()
	}
	if p.cfg.Tools != nil {
		r.Tools = p.cfg.Tools()
	}
	if p.cfg.ToolClasses != nil {
		r.Classes = p.cfg.ToolClasses()
	}
	r.Caps = p.refreshCaps()
	return r
}

// Reannounce has Run's announcements register the pool again now, not at
// the next interval: what it can run changed (an MCP server connected or
// dropped). It never blocks; calls while one is pending are one.
func (p *Pool) Reannounce() {
	select {
	case p.reannounce <- struct{}{}:
	default:
	}
}

// announce registers the pool at once and refreshes the registration until
// ctx ends, so that operators see the pool even while it is idle, and at
// once when Reannounce asks.
func (p *Pool) announce(ctx context.Context) {
	s := registry.New(p.db)
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-p.reannounce:
			t.Stop()
		}
		if err := s.Register(ctx, p.registration()); err != nil && ctx.Err() == nil {
			p.log.Debug("announcing the worker failed; it is retried", "err", err)
		}
		every := announceInterval
		if p.cfg.announceEvery > 0 {
			every = p.cfg.announceEvery
		}
		t.Reset(every)
	}
}

// Retire removes the registration Announce made, for a pool that will not
// Run after all.
func (p *Pool) Retire() { p.retire() }

// retire removes the pool's registration as it stops.
func (p *Pool) retire() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := registry.New(p.db).Retire(ctx, p.cfg.ID); err != nil {
		p.log.Debug("removing the worker's registration failed; it goes stale", "err", err)
	}
}
