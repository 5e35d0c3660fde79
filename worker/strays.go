package worker

import (
	"context"
	"time"
)

// strayInterval is how often a pool looks for due tasks it cannot run.
const strayInterval = time.Minute

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
	strays, err := p.store.Strays(ctx, p.cfg.Queues, p.kindNames)
	if err != nil {
		return // the producers report database trouble
	}
	for _, st := range strays {
		p.log.Warn("tasks wait for a kind this worker does not serve; another daemon must serve it, or the kind is wrong",
			"queue", st.Queue, "kind", st.Kind, "tasks", st.Tasks, "served", p.kindNames)
	}
}
