package worker

import (
	"context"
	"time"

	"github.com/agentledger/agentledger/claims"
)

// strayInterval is how often a pool looks for due tasks it cannot run.
const strayInterval = time.Minute

// watchStrays warns, at start and then every strayInterval, about due tasks
// of kinds no handler of this pool serves: they wait until a daemon that
// serves the kind runs — a misspelt kind would otherwise wait silently.
// Each look reads at most claims.StrayLookSize due tasks of a queue, going
// on where the last one stopped, for a pass of at most
// claims.StrayPassLooks: a backlog of a million is covered in a hundred
// looks rather than read whole by every daemon every minute, and what lies
// deeper is seen once the backlog before it has shrunk.
func (p *Pool) watchStrays(ctx context.Context) {
	t := time.NewTimer(2 * time.Second)
	defer t.Stop()
	places := map[string]claims.StrayPlace{}
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for _, q := range p.cfg.Queues {
			places[q] = p.reportStrays(ctx, q, places[q], claims.StrayLookSize)
		}
		t.Reset(strayInterval)
	}
}

// reportStrays looks at up to limit due tasks of queue from place on, warns
// about those of kinds this pool does not serve, and returns where the next
// look starts.
func (p *Pool) reportStrays(ctx context.Context, queue string, place claims.StrayPlace, limit int) claims.StrayPlace {
	look, err := p.store.LookForStrays(ctx, queue, p.kindNames, place, limit)
	if err != nil {
		return place // the producers report database trouble
	}
	for _, st := range look.Strays {
		args := []any{"queue", st.Queue, "kind", st.Kind, "tasks", st.Tasks, "served", p.kindNames}
		if !look.Whole {
			args = append(args, "counted_among_due", look.Read)
		}
		p.log.Warn("tasks wait for a kind this worker does not serve; another daemon must serve it, or the kind is wrong", args...)
	}
	return look.Next
}
