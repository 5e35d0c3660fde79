package worker

import (
	"context"
	"time"
)

// strayInterval is how often a pool looks for due tasks it cannot run.
const strayInterval = time.Minute

// straySQL counts the due tasks of the pool's queues whose kind it has no
// handler for (the claim never takes them).
const straySQL = `/* worker.stray */
SELECT queue, kind, count(*) FROM tasks
WHERE queue = ANY ($1::text[]) AND state IN ('queued', 'retrying') AND run_at <= now()
	AND NOT kind = ANY ($2::text[])
GROUP BY queue, kind ORDER BY queue, kind`

// watchStrays warns, at start and then every strayInterval, about due tasks
// of kinds no handler of this pool serves: they wait until a daemon that
// serves the kind runs — a misspelt kind would otherwise wait silently.
func (p *Pool) watchStrays(ctx context.Context) {
	t := time.NewTimer(2 * time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		p.reportStrays(ctx)
		t.Reset(strayInterval)
	}
}

func (p *Pool) reportStrays(ctx context.Context) {
	rows, err := p.db.Query(ctx, straySQL, p.cfg.Queues, p.kindNames)
	if err != nil {
		return // the producers report database trouble
	}
	defer rows.Close()
	for rows.Next() {
		var queue, kind string
		var n int64
		if rows.Scan(&queue, &kind, &n) != nil {
			return
		}
		p.log.Warn("tasks wait for a kind this worker does not serve; another daemon must serve it, or the kind is wrong",
			"queue", queue, "kind", kind, "tasks", n, "served", p.kindNames)
	}
}
