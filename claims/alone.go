package claims

import (
	"sync"

	"github.com/agentledger/agentledger"
)

// ClaimHint remembers, for one queue's claiming loop, whether a due-only
// claim should first try claimAloneSQL: the last full one got a single
// tenant's tasks. A try that comes back empty costs a second statement
// (the full claim, which tells "nothing due" from "another tenant or a
// cap"); after a miss of the second kind the loop claims in full for a
// while. The zero value is ready; a nil hint never tries.
//
// It also holds where the loop's tenants take turns: the last tenant its
// previous claim served, after which the next claim starts (claimDue's
// ring), so that a crowd of tenants is served in rotation.
type ClaimHint struct {
	mu   sync.Mutex
	n    int    // > 0: try alone (2: the last try was empty though the full claim was not); < 0: full claims left before trying again
	from string // the rotation's cursor: the last tenant served
}

// cursor is where the next claim's rotation starts ("" from the first
// tenant; a nil hint always starts there).
func (h *ClaimHint) cursor() string {
	if h == nil {
		return ""
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.from
}

// served moves the cursor past the tenants a claim that started at from
// took tasks of: the last of them in rotation order, which is the greatest
// at or before from once the ring wrapped, else the greatest.
func (h *ClaimHint) served(from string, tasks []*agentledger.Task) {
	if h == nil || len(tasks) == 0 {
		return
	}
	next := lastServed(from, tasks)
	h.mu.Lock()
	defer h.mu.Unlock()
	h.from = next
}

func lastServed(from string, tasks []*agentledger.Task) string {
	var after, wrapped string
	for _, t := range tasks {
		switch {
		case t.Tenant > from:
			after = max(after, t.Tenant)
		default:
			wrapped = max(wrapped, t.Tenant)
		}
	}
	if wrapped != "" {
		return wrapped
	}
	return after
}

// aloneBackoff is how many full claims follow an empty try.
const aloneBackoff = 32

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
	default:
		h.n = -aloneBackoff
	}
}

// saw notes what a full due-only claim got: one tenant's tasks make the
// next claim try alone, once the backoff after a miss is over.
func (h *ClaimHint) saw(tasks []*agentledger.Task) {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case h.n < 0:
		h.n++
	case len(tasks) > 0 && oneTenant(tasks):
		h.n = 1
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
