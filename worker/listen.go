package worker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/agentledger/agentledger/claims"
)

// NotifyChannel is the channel the tasks table's insert trigger notifies,
// with the queue name as payload.
const NotifyChannel = "agentledger_task_insert"

// The LISTEN session's liveness bound. A half-open connection (the server
// or the path to it gone without a reset) delivers nothing and reports no
// error until TCP gives up, minutes later, while the caches trusting the
// session keep serving what may have been revoked. So a session that has
// been quiet for listenIdle is pinged, and one that does not answer within
// listenPingTimeout is dropped: Listening(false) sends the caches to the
// store within listenIdle+listenPingTimeout (7s) of the last sign of life.
// A ping every 5s of quiet costs the server next to nothing; 2s is far
// beyond a healthy round trip, even to a loaded server.
const (
	listenIdle        = 5 * time.Second
	listenPingTimeout = 2 * time.Second
	// listenSetupTimeout bounds connecting and subscribing, so that a
	// reconnect through the same broken path fails and is retried instead
	// of hanging.
	listenSetupTimeout = 10 * time.Second
)

// listenHooks lets tests shorten the liveness bound and route the LISTEN
// session (through a proxy they can black-hole); zero fields take the
// defaults above and a connection from the pool.
type listenHooks struct {
	idle, pingTimeout, setupTimeout time.Duration
	connect                         func(ctx context.Context) (*pgx.Conn, error)
}

func orDefault(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

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

func (p *Pool) listenConn(ctx context.Context) (*pgx.Conn, error) {
	if connect := p.cfg.listen.connect; connect != nil {
		return connect(ctx)
	}
	conn, err := p.db.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	// The connection leaves the pool for good: a LISTENing session must not
	// be handed to other users.
	return conn.Hijack(), nil
}

func (p *Pool) listenOnce(ctx context.Context) error {
	idle := orDefault(p.cfg.listen.idle, listenIdle)
	pingTimeout := orDefault(p.cfg.listen.pingTimeout, listenPingTimeout)
	setup, cancel := context.WithTimeout(ctx, orDefault(p.cfg.listen.setupTimeout, listenSetupTimeout))
	defer cancel()
	c, err := p.listenConn(setup)
	if err != nil {
		return err
	}
	defer func() {
		// Bounded, since the server may be gone; then the socket is closed
		// whatever pgx did, so that a dead session's is not left to its
		// own cleanup (pgx drains a broken connection for up to 15s).
		closing, cancel := context.WithTimeout(context.Background(), pingTimeout)
		defer cancel()
		_ = c.Close(closing)
		_ = c.PgConn().Conn().Close()
	}()
	for _, ch := range []string{NotifyChannel, claims.CancelChannel} {
		if _, err := c.Exec(setup, "LISTEN "+ch); err != nil {
			return err
		}
	}
	for ch := range p.cfg.Channels {
		if _, err := c.Exec(setup, "LISTEN "+pgx.Identifier{ch}.Sanitize()); err != nil {
			return err
		}
	}
	if p.cfg.Listening != nil {
		p.cfg.Listening(true)
		defer p.cfg.Listening(false) // before the close: the caches stop trusting at once
	}
	// Anything inserted before LISTEN took effect is found by this claim,
	// and a cancel made while no session listened by this heartbeat.
	p.wakeAll()
	go p.keeper.beat(ctx)
	heard := time.Now() // the last sign of life
	for {
		last, err := p.hear(ctx, c, heard.Add(idle))
		if !last.IsZero() {
			heard = last
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if !errors.Is(err, context.DeadlineExceeded) || c.IsClosed() {
			return err
		}
		if time.Since(heard) < idle {
			continue // heard from since the deadline was set
		}
		// A notification arriving meanwhile is kept by pgx and returned by
		// the next WaitForNotification.
		ping, cancel := context.WithTimeout(ctx, pingTimeout)
		err = c.Ping(ping)
		cancel()
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil {
			return fmt.Errorf("LISTEN session quiet for %s did not answer a ping within %s: %w", idle, pingTimeout, err)
		}
		heard = time.Now()
	}
}

// hear hands over the notifications c receives until deadline or an
// error, and returns when it heard the last one (zero if none). One
// deadline serves every notification: under load the wait costs no timer
// per notification.
func (p *Pool) hear(ctx context.Context, c *pgx.Conn, deadline time.Time) (last time.Time, err error) {
	wait, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	for {
		n, err := c.WaitForNotification(wait)
		if err != nil {
			return last, err
		}
		last = time.Now()
		p.notified(n)
	}
}

// notified hands a notification to its channel's function, stops the
// attempt whose lease an operator cancelled, or wakes the producer of the
// queue it names.
func (p *Pool) notified(n *pgconn.Notification) {
	if n.Channel == claims.CancelChannel {
		if l, ok := claims.CancelNotice(n.Payload); ok {
			p.keeper.cancelHeard(l)
		}
		return
	}
	if n.Channel != NotifyChannel {
		if fn := p.cfg.Channels[n.Channel]; fn != nil {
			fn(n.Payload)
		}
		return
	}
	if ch, ok := p.wake[n.Payload]; ok {
		select {
		case ch <- struct{}{}:
		default:
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
