package slack

import (
	"context"
	"sync"
	"time"

	"github.com/agentledger/agentledger"
)

// pacer spaces calls: at least interval apart per channel, and one per
// emission interval over all channels after a burst (GCRA). A call is
// booked only when it may go, so a channel waiting for its interval holds
// up no other channel.
type pacer struct {
	interval  time.Duration // per channel; 0: unpaced
	emission  time.Duration // workspace: one call per emission; 0: unpaced
	tolerance time.Duration // workspace burst: (burst-1) * emission

	mu   sync.Mutex
	tat  time.Time            // workspace: theoretical arrival time
	next map[string]time.Time // per channel: earliest next call
}

// pruneAt is the number of channels remembered before stale ones go.
const pruneAt = 256

func newPacer(interval time.Duration, rate float64, burst int) *pacer {
	p := &pacer{next: map[string]time.Time{}}
	if interval > 0 {
		p.interval = interval
	}
	if rate > 0 {
		p.emission = time.Duration(float64(time.Second) / rate)
		p.tolerance = time.Duration(max(burst, 1)-1) * p.emission
	}
	return p
}

// take books a call to channel at now and answers 0 if it may go;
// otherwise it books nothing and answers how long to wait before asking
// again.
func (p *pacer) take(channel string, now time.Time) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	at := now
	if p.emission > 0 {
		at = maxTime(at, p.tat.Add(-p.tolerance))
	}
	if p.interval > 0 {
		at = maxTime(at, p.next[channel])
	}
	if at.After(now) {
		return at.Sub(now)
	}
	if p.emission > 0 {
		p.tat = maxTime(p.tat, now).Add(p.emission)
	}
	if p.interval > 0 {
		if len(p.next) >= pruneAt {
			for ch, t := range p.next {
				if !t.After(now) {
					delete(p.next, ch)
				}
			}
		}
		p.next[channel] = now.Add(p.interval)
	}
	return 0
}

// rekey moves channel from's pace to to, which names the same channel.
func (p *pacer) rekey(from, to string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if t, ok := p.next[from]; ok {
		p.next[to] = maxTime(p.next[to], t)
		delete(p.next, from)
	}
}

// wait returns when a call to the channel key names may go, booked, or
// with ctx's error. key is asked again before every try: a name's pace
// moves to its ID once the ID is learnt (rekey), meanwhile too.
func (p *pacer) wait(ctx context.Context, key func() string) error {
	for {
		d := p.take(key(), time.Now())
		if d <= 0 {
			return nil
		}
		if err := sleep(ctx, d); err != nil {
			return err
		}
	}
}

// sleep waits d or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	if d > 0 {
		agentledger.Sleep(ctx, d)
	}
	return ctx.Err()
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
