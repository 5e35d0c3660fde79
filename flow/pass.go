package flow

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/agentledger/agentledger"
)

// endTimeout bounds the writes that end a pass: they run after the call,
// whose context may be over.
const endTimeout = 5 * time.Second

// Pass is one call admitted to a target by Limiter.Admit. It holds the
// call's concurrency slot, and is the breaker's probe when half-open; the
// caller ends it once, with the call's outcome: Succeeded when the target
// answered (an answer that refuses the request, a 4xx, is an answer),
// Failed when it did not (a timeout, a 5xx, a connection error), Release
// when the call was not made. Later ends do nothing. A nil *Pass (no
// limit) may be ended too.
type Pass struct {
	l      *Limiter
	target string
	lim    Limit
	slot   int
	holder string
	keep   func() // stops the slot's renewals
	probe  bool

	mu    sync.Mutex
	ended bool
}

// Used counts tokens a model call spent against the target's token rate:
// they move its budget even when the call is over it, so the next calls
// wait. Call it before ending the pass.
func (p *Pass) Used(tokens int64) {
	if p == nil || p.lim.Tokens.IsZero() || tokens <= 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), endTimeout)
	defer cancel()
	if err := p.l.spendTokens(ctx, p.target, p.lim.Tokens, tokens); err != nil {
		p.l.logError(p.target, err)
	}
}

// Succeeded ends the pass of a call the target answered: a probe closes
// the breaker for every daemon.
func (p *Pass) Succeeded() {
	if !p.end() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), endTimeout)
	defer cancel()
	if p.probe {
		p.l.observeProbe(p.target, "succeeded")
		if _, err := endProbe(ctx, p.l.db, p.target, true, 0, ""); err != nil {
			p.l.logError(p.target, err)
		} else {
			p.l.log.Info("circuit breaker closed: its probe succeeded, calls to this target go", "target", p.target)
		}
	}
	p.releaseSlot(ctx)
}

// Failed ends the pass of a call the target did not answer; reason says
// how ("503 Service Unavailable", "no answer within 30s"), never with a
// secret. With a breaker, the failure is counted fleet-wide; when the
// breaker is open after it (this failure opened it, it was open already,
// or this was a failed probe), Failed returns an
// *agentledger.DeferredError until the breaker lets a probe through, so
// that the caller waits instead of spending an attempt; otherwise nil.
func (p *Pass) Failed(reason string) error {
	if !p.end() {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), endTimeout)
	defer cancel()
	defer p.releaseSlot(ctx)
	b := p.lim.Breaker
	if p.probe {
		// A probe of a breaker an operator opened for a while may have no
		// configuration: it opens again for defaultCooldown.
		cooldown := defaultCooldown
		if b != nil {
			cooldown = b.Cooldown
		}
		p.l.observeProbe(p.target, "failed")
		reopened, err := endProbe(ctx, p.l.db, p.target, false, cooldown, reason)
		if err != nil {
			p.l.logError(p.target, err)
			return nil
		}
		if reopened {
			// Opened again: counted as the breaker's opens count it
			// (agentctl breaker list); not when it was no longer half-open.
			p.l.observeOpen(p.target)
		}
		until := time.Now().Add(cooldown)
		p.l.log.Warn("circuit breaker open again: its probe failed", "target", p.target, "until", clock(until), "last_error", reason)
		return agentledger.Deferred(until, p.target,
			BreakerReason(p.target)+fmt.Sprintf("open until %s, its probe failed (%s)", clock(until), reason))
	}
	if b == nil {
		return nil
	}
	v, opened, err := recordFailure(ctx, p.l.db, p.target, b, reason)
	if err != nil {
		p.l.logError(p.target, err)
		return nil
	}
	if v.State == Closed {
		return nil
	}
	if opened {
		p.l.observeOpen(p.target)
		p.l.log.Warn("circuit breaker opened: calls to this target wait", "target", p.target,
			"failures", v.Failures, "window", b.Window, "cooldown", b.Cooldown, "last_error", reason)
	}
	p.l.sawBreaker(v)
	wait, why := v.wait(b)
	return agentledger.Deferred(time.Now().Add(wait), p.target, why)
}

// Release ends the pass of a call that was not made: its slot is free
// again and a probe's turn passes to the next call.
func (p *Pass) Release() {
	if !p.end() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), endTimeout)
	defer cancel()
	if p.probe {
		if _, err := endProbe(ctx, p.l.db, p.target, false, 0, ""); err != nil {
			p.l.logError(p.target, err)
		}
	}
	p.releaseSlot(ctx)
}

// end marks the pass ended, reporting whether it was not already.
func (p *Pass) end() bool {
	if p == nil {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ended {
		return false
	}
	p.ended = true
	return true
}

func (p *Pass) releaseSlot(ctx context.Context) {
	if p.holder == "" {
		return
	}
	p.keep()
	if err := p.l.release(ctx, p.target, p.slot, p.holder); err != nil {
		p.l.logError(p.target, err)
	}
}

// clock writes t as an operator reads a wait: "12:04:31 UTC".
func clock(t time.Time) string { return t.UTC().Format("15:04:05 UTC") }
