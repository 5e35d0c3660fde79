package registry

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentledger/agentledger"
)

// ExplainWaits says, on each task of ts that waits to be claimed (queued
// or retrying, with no reason of its own: a limit's; or running on a
// lease that expired, its worker gone), why no live pool would claim it:
// no pool serves its kind on its queue, or none that does has what it
// needs ("waiting for a daemon with tool open_ticket"), or its tenant
// runs as many tasks as its share allows. Tasks a live pool can run now
// are left as they are. It reads the live pools once, and only when a
// task waits.
func (s *Store) ExplainWaits(ctx context.Context, ts ...*agentledger.Task) error {
	var waiting []*agentledger.Task
	now := time.Now()
	for _, t := range ts {
		switch {
		case t == nil:
		case t.WaitReason == "" && (t.State == agentledger.StateQueued || t.State == agentledger.StateRetrying):
			waiting = append(waiting, t)
		case t.State == agentledger.StateRunning && t.LeaseExpiresAt != nil && t.LeaseExpiresAt.Before(now):
			// Its worker is gone: is there one to take it over?
			t.WaitReason = ""
			waiting = append(waiting, t)
		}
	}
	if len(waiting) == 0 {
		return nil
	}
	live, err := s.LiveWorkers(ctx)
	if err != nil {
		return err
	}
	var capped []*agentledger.Task // due and claimable: a tenant's cap may hold it
	for _, t := range waiting {
		t.WaitReason = Unserved(t, live)
		if t.WaitReason == "" && t.State != agentledger.StateRunning && !t.RunAt.After(now) {
			capped = append(capped, t)
		}
	}
	return s.explainCaps(ctx, capped)
}

// capsSQL reads, of the tenants $1, those whose share caps their running
// tasks, with the cap and how many they run now as the claims count them
// (the running tasks not marked uncapped: a look-up of each tenant's in
// tasks_capped_running_idx), and only when one of them has a cap.
const capsSQL = `/* registry.caps */
WITH capped AS (
	SELECT tenant, max_running FROM tenant_shares WHERE tenant = ANY ($1::text[]) AND max_running IS NOT NULL
),
running AS (
	SELECT tenant, count(*) AS n FROM tasks
	WHERE state = 'running' AND capped IS NOT FALSE AND tenant = ANY (ARRAY(SELECT tenant FROM capped))
	GROUP BY tenant
)
SELECT c.tenant, c.max_running, coalesce(r.n, 0) FROM capped c LEFT JOIN running r USING (tenant)`

// explainCaps says, on each task of ts whose tenant runs as many tasks as
// its share allows (agentctl tenant share --max-running), that it waits
// for one of them to end: claims pass it over until then. One read, and
// only when a task of ts may be held so.
func (s *Store) explainCaps(ctx context.Context, ts []*agentledger.Task) error {
	if len(ts) == 0 {
		return nil
	}
	var tenants []string
	for _, t := range ts {
		if !slices.Contains(tenants, t.Tenant) {
			tenants = append(tenants, t.Tenant)
		}
	}
	rows, err := s.db.Query(ctx, capsSQL, tenants)
	if err != nil {
		return fmt.Errorf("tenant caps: %w", err)
	}
	full := map[string]string{}
	var tenant string
	var limit, running int64
	if _, err := pgx.ForEachRow(rows, []any{&tenant, &limit, &running}, func() error {
		if running >= limit {
			full[tenant] = capFull(tenant, running, limit)
		}
		return nil
	}); err != nil {
		return fmt.Errorf("tenant caps: %w", err)
	}
	for _, t := range ts {
		t.WaitReason = full[t.Tenant]
	}
	return nil
}

// Unserved is why no pool of live would claim t (its queue, kind and
// needs), or "" when one would.
func Unserved(t *agentledger.Task, live []Worker) string {
	servers := serving(t, live)
	if len(servers) == 0 {
		return fmt.Sprintf("no live daemon serves %s on queue %s", t.Kind, t.Queue)
	}
	return WaitingFor(t.Needs, servers)
}

// Serves says whether a pool of live serves t's kind on its queue, whatever
// t needs.
func Serves(t *agentledger.Task, live []Worker) bool { return len(serving(t, live)) > 0 }

// serving are the pools of live that serve t's kind on its queue.
func serving(t *agentledger.Task, live []Worker) []Worker {
	var servers []Worker
	for _, w := range live {
		if slices.Contains(w.Queues, t.Queue) && (len(w.Kinds) == 0 || slices.Contains(w.Kinds, t.Kind)) {
			servers = append(servers, w)
		}
	}
	return servers
}

// capFull says that a tenant running running tasks under a cap of limit
// (running at least limit) starts no more until enough end: one, or, over
// its cap (lowered, or set, while they ran), all it runs above the cap and
// one more.
func capFull(tenant string, running, limit int64) string {
	if running == limit {
		return fmt.Sprintf("tenant %s runs %d of the %d tasks its share allows at once: the next starts when one ends", tenant, running, limit)
	}
	return fmt.Sprintf("tenant %s runs %d tasks, over the %d its share allows at once: the next starts when %d have ended",
		tenant, running, limit, running-limit+1)
}
