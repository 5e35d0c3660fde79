package worker

import (
	"fmt"
	"strings"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/registry"
)

// refreshCaps reads Config.Caps again for the claims to pass, and returns
// it; nil without Config.Caps.
func (p *Pool) refreshCaps() []string {
	if p.cfg.Caps == nil {
		return nil
	}
	caps := p.cfg.Caps()
	if caps == nil {
		caps = []string{} // none: claims take only tasks that need nothing
	}
	p.caps.Store(&caps)
	return caps
}

// claimCaps are the capabilities a claim passes: those last read; nil (any
// task) without Config.Caps.
func (p *Pool) claimCaps() []string {
	if c := p.caps.Load(); c != nil {
		return *c
	}
	return p.refreshCaps()
}

// lacks returns what task t needs that the pool does not have now: the
// claim matched t against the capabilities as last read, and one may
// have gone since (an MCP server disconnected). Nil for a task that needs
// nothing, without reading Config.Caps.
func (p *Pool) lacks(t *agentledger.Task) []string {
	if len(t.Needs) == 0 || p.cfg.Caps == nil {
		return nil
	}
	return registry.Missing(t.Needs, p.refreshCaps())
}

// handBack returns task t, which the pool claimed but cannot run (it lacks
// missing since the claim), to the queue at once without counting the
// attempt, for a pool that can; this pool's next claims no longer match it.
func (p *Pool) handBack(lease agentledger.Lease, t *agentledger.Task, missing []string) {
	words := make([]string, len(missing))
	for i, c := range missing {
		words[i] = registry.Describe(c)
	}
	reason := fmt.Sprintf("handed back by worker %s, which no longer has %s", p.cfg.ID, strings.Join(words, ", "))
	p.taskLog(t).Info("task handed back: this worker cannot run it now", "lacks", strings.Join(missing, ","))
	p.deferTask(lease, &agentledger.DeferredError{Until: time.Now(), Target: "capability", Reason: reason}, t)
}
