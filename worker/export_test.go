package worker

import (
	"context"
	"time"

	"github.com/agentledger/agentledger/claims"
)

// ReportStrays runs one look of p's for strays in queue, from its first
// due task, and at the queues, as watchStrays does every minute.
func ReportStrays(ctx context.Context, p *Pool, queue string) {
	p.reportStrays(ctx, queue, claims.StrayPlace{}, claims.StrayLookSize)
	p.reportUnworkedQueues(ctx)
}

// SetAnnounceEvery has a pool made with c refresh its registration every
// d instead of announceInterval.
func SetAnnounceEvery(c *Config, d time.Duration) { c.announceEvery = d }
