package schedule

import (
	"time"

	"github.com/robfig/cron/v3"
)

// maxWalk is how many due slots are counted one by one; past it, the
// latest ones are found by search and the count is a lower bound.
const maxWalk = 10_000

// due is what the slots of a schedule from its next fire through now come
// to.
type due struct {
	// Latest is the latest due slot (zero: none is due).
	Latest time.Time
	// Prev is the due slot before Latest (zero: Latest is the only one).
	Prev time.Time
	// Count is how many slots are due: exact up to maxWalk, a lower bound
	// past it.
	Count int64
	// Next is the first slot after now (zero: the spec has none left).
	Next time.Time
}

// walk follows the slots of c from first, itself a slot, through now.
// An @every spec's slots are first plus whole intervals; a calendar
// spec's are the same whatever they are counted from.
func (c compiled) walk(first, now time.Time) due {
	if first.After(now) {
		return due{Next: first}
	}
	if d, ok := c.sched.(cron.ConstantDelaySchedule); ok {
		n := int64(now.Sub(first) / d.Delay)
		latest := first.Add(time.Duration(n) * d.Delay)
		out := due{Latest: latest, Count: n + 1, Next: latest.Add(d.Delay)}
		if n > 0 {
			out.Prev = latest.Add(-d.Delay)
		}
		return out
	}
	var prev time.Time
	t := first
	for count := int64(1); ; count++ {
		nt := c.next(t)
		if nt.IsZero() || nt.After(now) {
			return due{Latest: t, Prev: prev, Count: count, Next: nt}
		}
		prev, t = t, nt
		if count+1 == maxWalk {
			break
		}
	}
	// Far too many to count: search for the latest slot and the one before.
	nt := c.next(t)
	if nt.IsZero() || nt.After(now) {
		return due{Latest: t, Prev: prev, Count: maxWalk, Next: nt}
	}
	latest := c.latestBy(t, now)
	prev = t
	if nt.Before(latest) {
		prev = c.latestBy(t, latest.Add(-time.Nanosecond))
	}
	return due{Latest: latest, Prev: prev, Count: maxWalk + 1, Next: c.next(latest)}
}

// latestBy returns the latest slot in (lo, bound], given that there is one
// (c.next(lo) <= bound): a slot lies in (p, bound] exactly when
// c.next(p) <= bound, so it searches for the latest such p.
func (c compiled) latestBy(lo, bound time.Time) time.Time {
	none := func(p time.Time) bool { n := c.next(p); return n.IsZero() || n.After(bound) }
	hi := bound // none(hi); !none(lo)
	for back := time.Second; ; back *= 2 {
		p := bound.Add(-back)
		if !p.After(lo) {
			break
		}
		if !none(p) {
			lo = p
			break
		}
		hi = p
	}
	// Slots are whole seconds: (lo, hi] holds one once it is a second long.
	for hi.Sub(lo) > time.Second {
		mid := lo.Add(hi.Sub(lo) / 2)
		if none(mid) {
			hi = mid
		} else {
			lo = mid
		}
	}
	return c.next(lo)
}
