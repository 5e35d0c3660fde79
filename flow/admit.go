package flow

import (
	"context"
	"fmt"
	"time"

	"github.com/agentledger/agentledger"
)

// WaitInPlace is the longest Admit waits inside the attempt: cheaper than
// handing the task back to the queue and claiming it again. A longer wait
// defers the task (agentledger.DeferredError), so that it holds no worker
// slot meanwhile.
const WaitInPlace = time.Second

// Waits Admit hands out for what it cannot time exactly.
const (
	unavailableWait = 5 * time.Second        // the limits cannot be read
	slotPoll        = 50 * time.Millisecond  // every concurrency slot is taken
	slotDefer       = time.Second            // … still, after WaitInPlace
	probeWait       = time.Second            // another call probes a half-open breaker
	manualRecheck   = 10 * time.Second       // an operator opened the breaker until closed
	minWait         = time.Millisecond       // never spin
	defaultCooldown = 30 * time.Second       // a probe of a breaker without configuration fails
	breakerFresh    = 250 * time.Millisecond // a breaker view older than this is read again when a probe is due
)

// Admit admits one call to target against its limit (its own, else its
// kind's default) and its circuit breaker, waiting in place up to
// WaitInPlace. A longer wait is an *agentledger.DeferredError whose
// reason says what the call waits for; when the limits cannot be read
// the call waits too (fail closed), and the log says so once a minute.
// hold is the longest the call may take: a breaker's probe is leased for
// hold + SlotGrace; a concurrency slot is leased for SlotLease and renewed
// while the pass is open. The caller ends the returned pass with the call's
// outcome; a target without limit or breaker gets a nil *Pass.
func (l *Limiter) Admit(ctx context.Context, target string, hold time.Duration) (*Pass, error) {
	t, kind, err := ParseTarget(target)
	if err != nil {
		return nil, err
	}
	if t == KindDefault(kind) {
		return nil, agentledger.Invalid("target", "%q is a kind's default, not a target a call reaches", target)
	}
	deadline := time.Now().Add(WaitInPlace)
	for {
		pass, wait, why, err := l.enter(ctx, t, kind, hold)
		switch {
		case err != nil && ctx.Err() != nil:
			return nil, ctx.Err()
		case err != nil:
			l.logError(t, err)
			return nil, agentledger.Deferred(time.Now().Add(unavailableWait), t,
				fmt.Sprintf("%s: its limit cannot be checked (database unavailable); calls wait", t))
		case wait == 0:
			return pass, nil
		case time.Now().Add(wait).After(deadline):
			return nil, agentledger.Deferred(time.Now().Add(wait), t, why)
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil, ctx.Err()
		case <-timer.C:
		}
	}
}

// enter makes one try at admitting a call to target: a pass, or how long
// to wait and why.
func (l *Limiter) enter(ctx context.Context, target, kind string, hold time.Duration) (*Pass, time.Duration, string, error) {
	lim, limited, err := l.limitOf(ctx, target, kind)
	if err != nil {
		return nil, 0, "", err
	}
	v, err := l.breakerOf(ctx, target)
	if err != nil {
		return nil, 0, "", err
	}
	probe := false
	if v != nil {
		if probe = v.probeDue(); !probe {
			wait, why := v.wait(lim.Breaker)
			return nil, wait, why, nil
		}
	}
	if !limited && !probe {
		return nil, 0, "", nil
	}
	p := &Pass{l: l, target: target, lim: lim}
	if lim.Concurrency > 0 {
		n, holder, ok, err := l.acquire(ctx, target, lim.Concurrency, l.slotLease)
		if err != nil {
			return nil, 0, "", err
		}
		if !ok {
			calls := fmt.Sprintf("%d calls", lim.Concurrency)
			if lim.Concurrency == 1 {
				calls = "1 call"
			}
			return nil, slotPoll, fmt.Sprintf("%s: %s in flight (the fleet's cap), waiting for one to end", target, calls), nil
		}
		p.slot, p.holder = n, holder
		p.keep = l.keepSlot(target, n, holder, l.slotLease)
	}
	if !lim.Rate.IsZero() {
		wait, err := l.take(ctx, target, kind)
		if err != nil || wait > 0 {
			p.Release()
			return nil, wait, fmt.Sprintf("%snext slot in %s", RateReason(target), wait.Round(100*time.Millisecond)), err
		}
	}
	if !lim.Tokens.IsZero() {
		wait, err := l.tokensWait(ctx, target, lim.Tokens)
		if err != nil || wait > 0 {
			p.Release()
			return nil, wait, fmt.Sprintf("%s(%s) spent, more in %s", TokenReason(target), lim.Tokens, wait.Round(100*time.Millisecond)), err
		}
	}
	if probe {
		won, err := claimProbe(ctx, l.db, target, hold+SlotGrace)
		if err != nil || !won {
			p.Release()
			l.forgetBreaker(target)
			return nil, probeWait, BreakerReason(target) + "half-open, one call is probing it", err
		}
		p.probe = true
		l.observeProbe(target, "started")
	}
	return p, 0, "", nil
}

// probeDue reports whether v lets a probe through now: open past its
// cool-down, or half-open with its probe's lease over.
func (v *breakerView) probeDue() bool {
	now := time.Now()
	switch v.State {
	case Open:
		return v.OpenUntil != nil && !v.local(*v.OpenUntil).After(now)
	case HalfOpen:
		return v.ProbeUntil == nil || !v.local(*v.ProbeUntil).After(now)
	}
	return false
}

// BreakerReason is how the wait reason of every task a breaker of target
// holds back begins (claims.ReleaseDeferred lets them through when the
// breaker is closed by hand).
func BreakerReason(target string) string { return target + ": circuit " }

// RateReason and TokenReason start the reasons of the tasks target's
// request rate and token budget deferred: when an operator changes or
// removes its limit, they go now, judged by the new one.
func RateReason(target string) string { return target + ": rate limit, " }

// TokenReason is RateReason's for the token budget.
func TokenReason(target string) string { return target + ": token budget " }

// wait says how long a call waits for breaker v (configured as b, nil when
// only an operator opened it), and why.
func (v *breakerView) wait(b *Breaker) (time.Duration, string) {
	now := time.Now()
	switch {
	case v.State == HalfOpen:
		return probeWait, BreakerReason(v.Target) + "half-open, one call is probing it"
	case v.OpenUntil == nil:
		return manualRecheck, BreakerReason(v.Target) + "opened by an operator until closed (agentctl breaker close " + v.Target + ")"
	}
	until := v.local(*v.OpenUntil)
	wait := max(until.Sub(now), minWait)
	if v.Manual {
		return wait, BreakerReason(v.Target) + "opened by an operator until " + clock(until)
	}
	why := BreakerReason(v.Target) + "open until " + clock(until)
	if b != nil {
		why += fmt.Sprintf(", %d failures in %s", v.Failures, Span(b.Window))
	}
	if v.LastError != "" {
		why += " (last: " + v.LastError + ")"
	}
	return wait, why
}

// breakerCache is what a Limiter knows of the breakers that are not
// closed: read with the limits' cadence (CacheFor), dropped at once when a
// daemon announces a change.
type breakerCache struct {
	open    *readCache[*breakerView] // by target
	onOpen  func(target string)
	onProbe func(target, result string)
}

// ObserveBreakers sets what the limiter tells when this daemon opens a
// breaker, or opens it again when its probe fails (onOpen), and when a
// probe starts, succeeds or fails (onProbe);
// for metrics. Set it before the first Admit.
func (l *Limiter) ObserveBreakers(onOpen func(target string), onProbe func(target, result string)) {
	l.breakers.onOpen, l.breakers.onProbe = onOpen, onProbe
}

func (l *Limiter) observeOpen(target string) {
	if f := l.breakers.onOpen; f != nil {
		f(target)
	}
}

func (l *Limiter) observeProbe(target, result string) {
	if f := l.breakers.onProbe; f != nil {
		f(target, result)
	}
}

// breakerOf returns target's breaker when it is not closed, else nil. A
// view whose probe is due is read again when older than breakerFresh, so
// that daemons do not all race for a probe another already took.
func (l *Limiter) breakerOf(ctx context.Context, target string) (*breakerView, error) {
	open, err := l.breakers.open.get(ctx, func(ctx context.Context) (map[string]*breakerView, error) {
		return loadBreakers(ctx, l.db)
	})
	if err != nil {
		return nil, err
	}
	v := open[target]
	if v != nil && v.probeDue() && (v.stale || time.Since(v.localAt) > breakerFresh) {
		nv, err := readBreaker(ctx, l.db, target)
		if err != nil {
			return nil, err
		}
		l.sawBreaker(nv)
		if nv.State == Closed {
			return nil, nil
		}
		v = nv
	}
	return v, nil
}

// sawBreaker keeps v, read just now, in the cache.
func (l *Limiter) sawBreaker(v *breakerView) {
	l.breakers.open.edit(func(m map[string]*breakerView) {
		if v.State == Closed {
			delete(m, v.Target)
		} else {
			m[v.Target] = v
		}
	})
}

// forgetBreaker marks target's cached view stale: the next call whose
// probe is due reads it again.
func (l *Limiter) forgetBreaker(target string) {
	l.breakers.open.edit(func(m map[string]*breakerView) {
		if v := m[target]; v != nil {
			stale := *v
			stale.stale = true
			m[target] = &stale
		}
	})
}
