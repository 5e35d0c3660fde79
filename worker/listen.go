package worker

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// NotifyChannel is the channel the tasks table's insert trigger notifies,
// with the queue name as payload.
const NotifyChannel = "agentledger_task_insert"

// listen holds one connection in LISTEN and wakes the producer of each
// notified queue. On error it reconnects with backoff; polling covers the gap.
func (p *Pool) listen(ctx context.Context) {
	const firstBackoff = 100 * time.Millisecond
	backoff := firstBackoff
	for ctx.Err() == nil {
		began := time.Now()
		err := p.listenOnce(ctx)
		if ctx.Err() != nil {
			return
		}
		if time.Since(began) > time.Minute { // a healthy session: start over
			backoff = firstBackoff
		}
		p.log.Warn("LISTEN connection failed; polling until it is back", "err", err, "retry_in", backoff)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 10*time.Second)
	}
}

func (p *Pool) listenOnce(ctx context.Context) error {
	conn, err := p.db.Acquire(ctx)
	if err != nil {
		return err
	}
	// The connection leaves the pool for good: a LISTENing session must not
	// be handed to other users.
	c := conn.Hijack()
	defer c.Close(context.Background())
	if _, err := c.Exec(ctx, "LISTEN "+NotifyChannel); err != nil {
		return err
	}
	for ch := range p.cfg.Channels {
		if _, err := c.Exec(ctx, "LISTEN "+pgx.Identifier{ch}.Sanitize()); err != nil {
			return err
		}
	}
	if p.cfg.Listening != nil {
		p.cfg.Listening(true)
		defer p.cfg.Listening(false)
	}
	// Anything inserted before LISTEN took effect is found by this claim.
	p.wakeAll()
	for {
		n, err := c.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		if n.Channel != NotifyChannel {
			if fn := p.cfg.Channels[n.Channel]; fn != nil {
				fn(n.Payload)
			}
			continue
		}
		if ch, ok := p.wake[n.Payload]; ok {
			select {
			case ch <- struct{}{}:
			default:
			}
		}
	}
}

func (p *Pool) wakeAll() {
	for _, ch := range p.wake {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}
