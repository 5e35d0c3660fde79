package claims

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// StrayLookSize is how many due tasks of a queue one look for strays
// reads. A look goes on from where the queue's last one stopped, so a
// backlog larger than this is covered over several looks instead of read
// whole by every pool at every look.
const StrayLookSize = 10_000

// StrayPassLooks is how many looks one pass over a queue takes at most
// before the next starts at the first due task again: where new tasks keep
// coming in past the place, a pass would otherwise never reach the end,
// and what sorts before its place would never be read again.
const StrayPassLooks = 100

// Stray is a count of due tasks, and of running ones whose lease expired
// (their worker gone: stranded), of one kind and needs that a worker pool
// cannot run: it does not serve the kind, or lacks what they need. IDs
// and StrandedIDs are the first few of each.
type Stray struct {
	Queue, Kind string
	Needs       []string
	Tasks       int64
	IDs         []int64
	Stranded    int64
	StrandedIDs []int64
}

// StrayPlace is where a queue's next look for strays starts: past the due
// task it names, in tasks_runnable_tenant_idx's order (tenant, priority,
// run_at, id). The zero value starts at the queue's first due task.
type StrayPlace struct {
	tenant string
	key    markKey
	set    bool
	looks  int // of this pass, before this place
}

// StrayLook is what one look at a queue found.
type StrayLook struct {
	// Strays are the tasks, among those read and the running ones whose
	// lease expired, that the pool cannot run, counted by kind and needs.
	Strays []Stray
	// Read is how many due tasks the look read; Whole says they are all of
	// the queue's (it started at the first and read fewer than its limit:
	// a queue of exactly the limit reads as not whole).
	Read  int
	Whole bool
	// Next is where the queue's next look starts: the first due task again
	// when this one read fewer than its limit (with exactly the limit left,
	// the next look reads none and starts over), or ended a pass of
	// StrayPassLooks.
	Next StrayPlace
}

// LookForStrays reads up to limit due tasks of queue from place on, and
// up to limit running ones whose lease expired, and counts, by kind and
// needs, those of kinds not in kinds or needing what caps lack (nil caps:
// the pool runs any task): they wait for a daemon that can run them.
func (s *Store) LookForStrays(ctx context.Context, queue string, kinds, caps []string, place StrayPlace, limit int) (StrayLook, error) {
	if limit < 1 {
		return StrayLook{}, fmt.Errorf("strays: a look reads at least one task, not %d", limit)
	}
	from := StrayPlace{key: before}
	if place.set {
		from = place
	}
	var (
		read   int
		tenant *string
		prio   *int16
		runAt  *time.Time
		id     *int64
		counts []struct {
			Kind  string   `json:"kind"`
			Needs []string `json:"needs"`
			N     int64    `json:"n"`
			IDs   []int64  `json:"ids"`
			S     int64    `json:"stranded"`
			SIDs  []int64  `json:"stranded_ids"`
		}
	)
	if err := s.db.QueryRow(ctx, straysSQL, queue, kinds, from.tenant, from.key.priority, from.key.runAt, from.key.id, limit, caps).
		Scan(&read, &tenant, &prio, &runAt, &id, &counts); err != nil {
		return StrayLook{}, fmt.Errorf("strays: %w", err)
	}
	look := StrayLook{Read: read}
	for _, c := range counts {
		look.Strays = append(look.Strays, Stray{Queue: queue, Kind: c.Kind, Needs: c.Needs, Tasks: c.N, IDs: c.IDs,
			Stranded: c.S, StrandedIDs: c.SIDs})
	}
	if read == limit && tenant != nil {
		if looks := place.looks + 1; looks < StrayPassLooks {
			look.Next = StrayPlace{tenant: *tenant, key: markKey{priority: *prio, runAt: *runAt, id: *id}, set: true, looks: looks}
		}
	} else {
		look.Whole = !place.set
	}
	return look, nil
}

// UnworkedQueue is a queue with due tasks, or running ones whose lease
// expired, that no live pool works.
type UnworkedQueue struct {
	Queue    string
	Tasks    int64   // due, counted up to the look's limit
	IDs      []int64 // the first few
	Stranded int64   // running, their lease expired: counted so too
	// StrandedIDs are the first few of those.
	StrandedIDs []int64
}

// unworkedQueuesMax is how many queues one look at the queues names.
const unworkedQueuesMax = 100

// UnworkedQueues finds the queues with due tasks, or running ones whose
// lease expired, that are not among worked (the queues the live pools
// claim from), and counts up to limit of each: a task submitted with
// --allow-unserved to a misspelt queue waits there for ever. At most
// unworkedQueuesMax queues. One look a minute serves the fleet: owner
// takes the look's turn for 50 s, and a pool that finds it taken gets
// nothing (queueLookTurnSQL).
func (s *Store) UnworkedQueues(ctx context.Context, owner string, worked []string, limit int) ([]UnworkedQueue, error) {
	var took string
	if err := s.db.QueryRow(ctx, queueLookTurnSQL, owner).Scan(&took); errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	} else if err != nil {
		return nil, fmt.Errorf("unworked queues: %w", err)
	}
	rows, err := s.db.Query(ctx, unworkedQueuesSQL, worked, limit, unworkedQueuesMax)
	if err != nil {
		return nil, fmt.Errorf("unworked queues: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (UnworkedQueue, error) {
		var q UnworkedQueue
		return q, r.Scan(&q.Queue, &q.Tasks, &q.IDs, &q.Stranded, &q.StrandedIDs)
	})
	if err != nil {
		return nil, fmt.Errorf("unworked queues: %w", err)
	}
	return out, nil
}
