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
type ClaimHint struct {
	mu sync.Mutex
	n  int // > 0: try alone (2: the last try was empty though the full claim was not); < 0: full claims left before trying again
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
