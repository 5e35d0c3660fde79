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

// watchStrays warns, once the fleet has had time to announce itself
// (announceInterval after start) and then every strayInterval, about due
// tasks no live pool of the fleet would claim: in the pool's queues, of
// kinds none serves, or needing what no pool that serves their kind has
// (a tool, an MCP server, an origin); and in queues no live pool works.
// They wait until a daemon that can run them starts — a misspelt kind
// would otherwise wait silently. Tasks this pool cannot run
// but another live one can are not warned of: a mixed fleet's daemons
// would otherwise each warn about the others' work every minute.
// Each look reads at most claims.StrayLookSize due tasks of a queue, going
// on where the last one stopped, for a pass of at most
// claims.StrayPassLooks: a backlog of a million is covered in a hundred
// looks rather than read whole by every daemon every minute, and what lies
// deeper is seen once the backlog before it has shrunk.
func (p *Pool) watchStrays(ctx context.Context) {
	t := time.NewTimer(announceInterval)
	defer t.Stop()
	places := map[string]claims.StrayPlace{}
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		p.lookForStrays(ctx, places, claims.StrayLookSize)
		t.Reset(strayInterval)
	}
}

// lookForStrays is one look: the live pools read once, then each of the
// pool's queues from its place (up to limit due tasks), moving the places
// on, then the queues no live pool works. Without the registry it warns
// about nothing and the places stay: this pool's word alone would name
// another's work.
func (p *Pool) lookForStrays(ctx context.Context, places map[string]claims.StrayPlace, limit int) {
	live, err := registry.New(p.db).LiveWorkers(ctx)
	if err != nil {
		return // looked at again at the next look
	}
	for _, q := range p.cfg.Queues {
		places[q] = p.reportStrays(ctx, q, places[q], limit, live)
	}
	p.reportUnworkedQueues(ctx, live)
}

// reportStrays looks at up to limit due tasks of queue from place on, warns
// about those that no pool of live (this one included) would claim, and
// returns where the next look starts.
func (p *Pool) reportStrays(ctx context.Context, queue string, place claims.StrayPlace, limit int, live []registry.Worker) claims.StrayPlace {
	look, err := p.store.LookForStrays(ctx, queue, p.kindNames, p.claimCaps(), place, limit)
	if err != nil {
		return place // the producers report database trouble
	}
	for _, st := range look.Strays {
		t := &agentledger.Task{Queue: st.Queue, Kind: st.Kind, Needs: st.Needs}
		reason := registry.Unserved(t, live)
		if reason == "" {
			continue // a live pool would claim them
		}
		msg := "tasks wait for a kind no live daemon serves; start one that serves it, or the kind is wrong"
		args := []any{"queue", st.Queue, "kind", st.Kind}
		if registry.Serves(t, live) {
			// The reason names what is missing, and a server a live daemon
			// has but cannot reach (registry.WaitingFor).
			msg = "tasks wait for what no live daemon serving their kind has; start one that has it, or fix what the reason names"
			args = append(args, "needs", strings.Join(st.Needs, ","))
		}
		args = append(append(args, counted(st.Tasks, st.IDs, st.Stranded, st.StrandedIDs)...), "reason", reason)
		if !look.Whole {
			args = append(args, "counted_among_due", look.Read)
		}
		p.log.Warn(msg, args...)
	}
	return look.Next
}

// reportUnworkedQueues warns about the queues with due tasks, or running
// ones whose daemon died, that no pool of live works (a
// misspelt --queue at submit, or the only daemon of a queue killed): no
// pool's look at its own queues sees them. One pool of the fleet looks a
// minute (claims.UnworkedQueues): ten daemons do not each say it.
func (p *Pool) reportUnworkedQueues(ctx context.Context, live []registry.Worker) {
	var worked []string
	for _, w := range live {
		worked = append(worked, w.Queues...)
	}
	queues, err := p.store.UnworkedQueues(ctx, p.cfg.ID, worked, claims.StrayLookSize)
	if err != nil {
		p.log.Debug("looking for queues no daemon works failed; looked at again in a minute", "err", err)
		return
	}
	for _, q := range queues {
		args := append([]any{"queue", q.Queue}, counted(q.Tasks, q.IDs, q.Stranded, q.StrandedIDs)...)
		if q.Tasks >= claims.StrayLookSize || q.Stranded >= claims.StrayLookSize {
			args = append(args, "counted_up_to", claims.StrayLookSize)
		}
		p.log.Warn("tasks wait on a queue no live daemon works; start one on it, or the queue is wrong", args...)
	}
}

// counted is a warning's count of the tasks found waiting: the due ones
// and their first ids, and the running ones whose lease expired (their
// daemon died), when there are any.
func counted(tasks int64, ids []int64, stranded int64, strandedIDs []int64) []any {
	args := []any{"tasks", tasks, "ids", ids}
	if stranded > 0 {
		args = append(args, "lease_expired", stranded, "lease_expired_ids", strandedIDs)
	}
	return args
}
