package worker

import (
	"context"
	"time"

	"github.com/agentledger/agentledger/claims"
)

// ReportStrays runs one look of p's for strays in its queues, from their
// first due tasks, and at the queues, as watchStrays does every minute.
func ReportStrays(ctx context.Context, p *Pool) {
	p.lookForStrays(ctx, map[string]claims.StrayPlace{}, claims.StrayLookSize)
}

// SetAnnounceEvery has a pool made with c refresh its registration every
// d instead of announceInterval.
func SetAnnounceEvery(c *Config, d time.Duration) { c.announceEvery = d }
