package worker

import (
	"context"
	"strings"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/registry"
)

// strayInterval is how often a pool looks for due tasks it cannot run.
const strayInterval = time.Minute

// watchStrays warns, at start and then every strayInterval, about due tasks
// no live pool of the fleet would claim: of kinds no handler serves, or
// needing what no pool that serves their kind has (a tool, an MCP server,
// an origin). They wait until a daemon that can run them starts — a
// misspelt kind would otherwise wait silently. Tasks this pool cannot run
// but another live one can are not warned of: a mixed fleet's daemons
// would otherwise each warn about the others' work every minute.
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
// about those that neither this pool nor, by the registry, any other live
// one would claim, and returns where the next look starts. When the live
// pools cannot be read, it warns about all this pool cannot run.
func (p *Pool) reportStrays(ctx context.Context, queue string, place claims.StrayPlace, limit int) claims.StrayPlace {
	look, err := p.store.LookForStrays(ctx, queue, p.kindNames, p.claimCaps(), place, limit)
	if err != nil {
		return place // the producers report database trouble
	}
	if len(look.Strays)+len(look.Unmet) == 0 {
		return look.Next
	}
	// Without the registry, the pool's own word: it cannot run them.
	live, lerr := registry.New(p.db).LiveWorkers(ctx)
	warn := func(msg string, st claims.Stray, args ...any) {
		reason := ""
		if lerr == nil {
			if reason = registry.Unserved(&agentledger.Task{Queue: st.Queue, Kind: st.Kind, Needs: st.Needs}, live); reason == "" {
				return // a live pool would claim them
			}
		}
		args = append([]any{"queue", st.Queue, "kind", st.Kind}, args...)
		args = append(args, "tasks", st.Tasks)
		if reason != "" {
			args = append(args, "reason", reason)
		}
		if !look.Whole {
			args = append(args, "counted_among_due", look.Read)
		}
		p.log.Warn(msg, args...)
	}
	for _, st := range look.Strays {
		warn("tasks wait for a kind this worker does not serve; another daemon must serve it, or the kind is wrong", st,
			"served", p.kindNames)
	}
	for _, st := range look.Unmet {
		warn("tasks wait for what no live daemon serving their kind has; start one that has it", st,
			"needs", strings.Join(st.Needs, ","))
	}
	return look.Next
}
