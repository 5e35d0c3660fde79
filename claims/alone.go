package claims

import (
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentledger/agentledger"
)

// ClaimHint remembers, for one queue's claiming loop, whether a due-only
// claim should first try claimAloneSQL: the last full one got a single
// tenant's tasks. A try that comes back empty costs a second statement
// (the full claim, which tells "nothing due" from "another tenant or a
// cap"); after a miss of the second kind the loop claims in full for a
// while. The zero value is ready; a nil hint never tries.
//
// While the loop claims alone it also keeps the tenant it found alone and
// the mark: the last task its alone claims took, past which the next one
// reads (claimAloneSQL says why). A due task that sorts before the mark —
// one of a higher priority enqueued since, one another transaction had
// locked — waits until the mark is dropped: when a claim comes back short,
// and at Rewind, which the loop calls at its poll and when notified of new
// tasks.
//
// It also holds where the loop's tenants stand in their rotation (a crowd
// of them takes turns, claimDue): the last tenant its claims served, at
// which the next claim starts, and how many tasks that tenant got in its
// current turn, which the next claim completes before moving on. While
// the full claims serve several tenants, a due-only claim first tries
// claimRunSQL, which reads a crowd of thin tenants' turns in one pass;
// after an empty try the loop claims in full for a while.
type ClaimHint struct {
	mu   sync.Mutex
	n    int    // > 0: try alone (2: the last try was empty though the full claim was not); < 0: full claims left before trying again
	from string // the rotation's cursor: the last tenant served ("": from the first)
	got  int    // tasks from got in its current turn
	owed int    // rotation tasks to serve before a claim of fewer than 4 tasks gives the lane a slot again
	run  int    // > 0: try claimRunSQL (a crowd of thin tenants); < 0: full claims left before trying again
	// runMisses counts the empty run claims since the last that took tasks.
	runMisses int
	// trust is how many run claims may still skip the crowd's proof: a
	// chain of full run claims since the last that proved it (trusted);
	// proven is the crowd that one proved (crowdSize of its limit).
	trust, proven int
	// tenant is the one found alone; mark the last task the alone claims
	// took (hasMark false: read from the tenant's first task).
	tenant  string
	mark    markKey
	hasMark bool
	// order is how the database orders tenant names, asked once per loop
	// (rotation.go): a worker makes a Store for each claim.
	order atomic.Int32
	// spread: the rotation starts at a tenant drawn at random (Store.place),
	// placed once a draw found one; placeAt is when the next draw may run.
	spread, placed bool
	placeAt        time.Time
}

// SpreadHint returns a hint for one of many loops that claim from the
// same queue, in this daemon and others: its rotation starts at a tenant
// drawn at random instead of the first, so that the loops serve different
// parts of a crowd of tenants instead of claiming, one after the other,
// the same tenants' tasks (rotation.go).
func SpreadHint() *ClaimHint { return &ClaimHint{spread: true} }

// lane is how many of a claim of n tasks the newcomer lane may take: a
// quarter, rounded up, so the rotation keeps at least half of any claim.
// A claim of fewer than 4 tasks (a busy loop's, a slot or two at a time)
// gives the lane a slot unless the lane took a task in the loop's last
// few claims: after the lane takes one, the rotation serves 3 before a
// small claim gives it another, so a stream of newcomers cannot crowd the
// rotation out, and a newcomer after a quiet spell is in the next claim
// (without a hint, a small claim gives it none).
func (h *ClaimHint) lane(n int) int {
	switch {
	case n >= 4:
		return (n + 3) / 4
	case h == nil:
		return 0
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.owed > 0 {
		return 0
	}
	return 1
}

// aloneBackoff is how many full claims follow an empty try.
const aloneBackoff = 32

// cursor is where the next claim's rotation starts, and what the tenant
// there got of its turn (a nil hint always starts at the first tenant).
func (h *ClaimHint) cursor() (string, int) {
	if h == nil {
		return "", 0
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.from, h.got
}

// served moves the cursor to last, the last tenant in rotation order
// that a claim which started at from served (Store.lastServed) with
// tasks, and adds what that tenant got to its turn when the claim started
// there. laned is how many tasks the claim's newcomer lane took.
func (h *ClaimHint) served(from string, got int, last string, tasks []*agentledger.Task, laned int) {
	if h == nil {
		return
	}
	n := 0
	for _, t := range tasks {
		if t.Tenant == last {
			n++
		}
	}
	if last == from {
		n += got
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if laned > 0 {
		h.owed = 3
	} else {
		h.owed = max(h.owed-len(tasks), 0)
	}
	if len(tasks) > 0 {
		h.from, h.got = last, n
	}
}

// markKey is a task's place in a tenant's claim order.
type markKey struct {
	priority int16
	runAt    time.Time
	id       int64
}

// before is below every task's place: an alone claim without a mark reads
// from the tenant's first task.
var before = markKey{priority: math.MinInt16, runAt: time.Time{}, id: math.MinInt64}

// alone returns the tenant of the next alone claim, the place past which
// it reads, and whether that is a mark (past): the claim then takes only
// rows untouched since written (claimAloneSQL).
func (h *ClaimHint) alone() (string, markKey, bool) {
	if h == nil {
		return "", before, false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.hasMark {
		return h.tenant, before, false
	}
	return h.tenant, h.mark, true
}

// took notes what an alone claim of limit tasks took (sorted in claim
// order): the next reads past the last of them. A short claim drops the
// mark: the tasks past it are drained, and any before it are read again
// from the tenant's first task.
func (h *ClaimHint) took(tasks []*agentledger.Task, limit int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(tasks) < limit {
		h.hasMark = false
		return
	}
	last := tasks[len(tasks)-1]
	h.mark, h.hasMark = markKey{priority: last.Priority, runAt: last.RunAt, id: last.ID}, true
}

// Rewind drops the mark: the next alone claim reads the tenant's tasks
// from the first. A claiming loop calls it at its poll and when notified
// of new tasks, which may sort before the mark. Safe on a nil hint.
func (h *ClaimHint) Rewind() {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.hasMark = false
}

// aloneTenant notes that a full claim got tenant's tasks alone: the alone
// claims that follow are its, from its first task. Under h.mu.
func (h *ClaimHint) aloneTenant(tenant string) {
	h.tenant, h.hasMark = tenant, false
}

func (h *ClaimHint) likely() bool {
	if h == nil {
		return false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.n > 0
}

// after notes what the full claim got after an empty try (nil after a
// hit of the alone claim itself): another
// tenant's tasks are a miss; one tenant's may have committed between the
// two statements, and count as a miss only the second time in a row (a
// capped tenant is never claimed alone).
func (h *ClaimHint) after(tasks []*agentledger.Task) {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case len(tasks) == 0:
		h.n = 1
	case oneTenant(tasks) && h.n == 1:
		h.n = 2
		h.aloneTenant(tasks[0].Tenant)
	default:
		h.n = -aloneBackoff
	}
}

// runBackoff is the most full claims that follow an empty run claim.
const runBackoff = 16

// crowded says whether the next due-only claim should try claimRunSQL:
// the last full one served several tenants, and no run claim came back
// empty since (or the backoff after one is over).
func (h *ClaimHint) crowded() bool {
	if h == nil {
		return false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.run > 0
}

// provenRuns is how many run claims follow one that proved the crowd and
// came back full without proving it again, while each of them comes back
// full too.
const provenRuns = 7

// crowdSize is crowdAt for a claim of limit tasks: how many tenants with
// due tasks make a crowd for it.
func crowdSize(limit int) int { return max((limit+3)/4, 64) }

// trusted says whether the next run claim, of limit tasks, may skip
// proving the crowd (claimRunSQL's $11): a crowd proven for a smaller
// claim is not one for a larger.
func (h *ClaimHint) trusted(limit int) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.trust > 0 && crowdSize(limit) <= h.proven
}

// ranShort notes a run claim that missed — came back empty, with less
// than half its batch, or failed: the full claims that follow are not
// preceded by one for a while.
//
// The first empty try after a run claim that took tasks is, most often,
// the end of the rotation (fewer than a crowd of tenants past the
// cursor): one full claim wraps around, and the next try takes turns
// again. Tries that keep coming back empty (a crowd of deep tenants)
// wait twice as long each time, up to runBackoff full claims.
func (h *ClaimHint) ranShort() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.run = -min(1<<h.runMisses, runBackoff)
	h.trust = 0
	if 1<<h.runMisses < runBackoff {
		h.runMisses++
	}
}

// ran notes a run claim of limit tasks that took at least half of them:
// full says whether it took them all, and trusted whether it skipped the
// crowd's proof. Only a chain of full ones, from one that proved the
// crowd, skips it.
func (h *ClaimHint) ran(limit int, full, trusted bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.runMisses = 0
	switch {
	case !full:
		h.trust = 0
	case !trusted:
		h.trust, h.proven = provenRuns, crowdSize(limit)
	case h.trust > 0:
		h.trust--
	}
}

// saw notes what a full due-only claim got: one tenant's tasks make the
// next claim try alone, once the backoff after a miss is over; several
// tenants', a run claim, once its own backoff is over.
func (h *ClaimHint) saw(tasks []*agentledger.Task) {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.run < 0 {
		h.run++
	}
	if h.run >= 0 && len(tasks) > 0 {
		h.run = 0
		if !oneTenant(tasks) {
			h.run = 1
		}
	}
	switch {
	case h.n < 0:
		h.n++
	case len(tasks) > 0 && oneTenant(tasks):
		h.n = 1
		h.aloneTenant(tasks[0].Tenant)
	case len(tasks) > 0:
		h.n = 0
	}
}

func oneTenant(tasks []*agentledger.Task) bool {
	for _, t := range tasks[1:] {
		if t.Tenant != tasks[0].Tenant {
			return false
		}
	}
	return true
}
