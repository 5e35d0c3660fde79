package outbox

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/agentledger/agentledger"
)

// Handler delivers one claimed event. A nil error marks it delivered;
// agentledger.Permanent gives it up; agentledger.RetryAfter brings it back
// after the wait without counting a failure; ErrLeaseLost drops it (another
// dispatcher has it); any other error is a failed delivery, retried with
// backoff. Its context ends shortly before the claim's lease.
//
// A delivered event's channel is where it went, when not c.Channel ("":
// c.Channel): an event that edits its task's message in place reaches the
// channel the message was first posted to, which its rule may since have
// changed, and the event's row is made to say so.
type Handler interface {
	Deliver(ctx context.Context, c Claimed) (channel string, err error)
}

// Config tunes a Dispatcher; zero fields take the defaults.
type Config struct {
	// Owner names the dispatcher in leases, e.g. "host:pid".
	Owner string
	// Concurrency is how many events are delivered at once (8).
	Concurrency int
	// Lease is how long a claim lasts (1 minute); it must outlast a
	// delivery, including a rate limit's wait.
	Lease time.Duration
	// Poll is the wait between claims when nothing was due (500ms).
	Poll time.Duration
	// MaxFailures gives an event up after that many failed deliveries (20).
	MaxFailures int32
	// Backoff spaces failed deliveries (2s doubling to 10 minutes).
	Backoff agentledger.Backoff
	Logger  *slog.Logger
	// OnSettle, when set, is told how each delivery ended, for metrics:
	// delivered, retry, rate_limited, failed or lost (the claim was).
	OnSettle func(outcome string)
}

// Defaults.
const (
	DefaultConcurrency = 8
	DefaultLease       = time.Minute
	DefaultPoll        = 500 * time.Millisecond
	DefaultMaxFailures = 20
)

// DefaultBackoff spaces failed deliveries.
var DefaultBackoff = agentledger.Backoff{Base: 2 * time.Second, Max: 10 * time.Minute, Jitter: 0.2}

// Dispatcher claims due events and hands them to a Handler.
type Dispatcher struct {
	store *Store
	h     Handler
	cfg   Config
	log   *slog.Logger
}

// NewDispatcher returns a dispatcher of store's events to h.
func NewDispatcher(store *Store, h Handler, cfg Config) (*Dispatcher, error) {
	if cfg.Owner == "" {
		return nil, agentledger.Invalid("owner", "a dispatcher needs an owner name")
	}
	cfg.Concurrency = max(cfg.Concurrency, 0)
	if cfg.Concurrency == 0 {
		cfg.Concurrency = DefaultConcurrency
	}
	if cfg.Lease == 0 {
		cfg.Lease = DefaultLease
	}
	if cfg.Lease < time.Second {
		return nil, agentledger.Invalid("lease", "%s is shorter than a second", cfg.Lease)
	}
	if cfg.Poll <= 0 {
		cfg.Poll = DefaultPoll
	}
	if cfg.MaxFailures <= 0 {
		cfg.MaxFailures = DefaultMaxFailures
	}
	if cfg.Backoff.Base == 0 {
		cfg.Backoff = DefaultBackoff
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Dispatcher{store: store, h: h, cfg: cfg, log: log}, nil
}

// Run dispatches until ctx ends, then waits for the deliveries in flight
// (each bounded by its lease) and returns nil. A database error is logged
// and retried after Poll.
func (d *Dispatcher) Run(ctx context.Context) error {
	for {
		n, err := d.RunOnce(ctx)
		if err != nil && ctx.Err() == nil {
			d.log.Warn("outbox: claiming events failed", "err", err)
		}
		if ctx.Err() != nil {
			return nil
		}
		if n > 0 && err == nil {
			continue // more may be due
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(d.cfg.Poll):
		}
	}
}

// RunOnce claims one batch of due events, delivers them concurrently, and
// returns how many it claimed once all are settled.
func (d *Dispatcher) RunOnce(ctx context.Context) (int, error) {
	batch, err := d.store.Claim(ctx, d.cfg.Owner, d.cfg.Concurrency, d.cfg.Lease)
	if err != nil {
		return 0, err
	}
	var wg sync.WaitGroup
	for _, c := range batch {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d.deliver(ctx, c)
		}()
	}
	wg.Wait()
	return len(batch), nil
}

// deliver runs the handler on c and settles the event. A shutdown does
// not cut a delivery short: it would leave a post's outcome unknown for
// nothing. The lease does: a delivery must end while the claim holds, and
// a sixth of the lease is kept for settling.
func (d *Dispatcher) deliver(ctx context.Context, c Claimed) {
	deadline := c.LeaseExpiresAt.Add(-d.cfg.Lease / 6)
	if d.store.Now != nil { // a pinned clock: the lease is measured from it
		deadline = time.Now().Add(c.LeaseExpiresAt.Sub(d.store.Now()) - d.cfg.Lease/6)
	}
	ctx, span := traceDelivery(ctx, c)
	dctx, cancel := context.WithDeadline(context.WithoutCancel(ctx), deadline)
	defer cancel()
	channel, herr := d.h.Deliver(dctx, c)
	sctx, scancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer scancel()
	log := d.log.With("event", c.ID, "task", c.TaskID, "rule", c.Rule, "channel", c.Channel)
	var err error
	var outcome string
	var perm *agentledger.PermanentError
	var wait *agentledger.RetryAfterError
	switch {
	case herr == nil:
		outcome, err = "delivered", d.store.Delivered(sctx, c, channel)
	case errors.Is(herr, agentledger.ErrLeaseLost):
		log.Warn("outbox: claim lost during delivery; another dispatcher delivers the event", "err", herr)
		outcome = "lost"
	case errors.As(herr, &perm):
		log.Error("outbox: delivery failed permanently", "err", herr)
		outcome, err = "failed", d.store.Failed(sctx, c, herr.Error())
	case errors.As(herr, &wait):
		log.Info("outbox: delivery rate limited", "retry_after", wait.After)
		outcome, err = "rate_limited", d.store.Retry(sctx, c, d.store.clock().Add(wait.After), false, herr.Error())
	case c.Failures+1 >= d.cfg.MaxFailures:
		log.Error("outbox: delivery failed; giving up", "failures", c.Failures+1, "err", herr)
		outcome, err = "failed", d.store.Failed(sctx, c, fmt.Sprintf("gave up after %d failed deliveries: %v", c.Failures+1, herr))
	default:
		delay := d.cfg.Backoff.Delay(c.Failures + 1)
		log.Warn("outbox: delivery failed; will retry", "failures", c.Failures+1, "retry_in", delay, "err", herr)
		outcome, err = "retry", d.store.Retry(sctx, c, d.store.clock().Add(delay), true, herr.Error())
	}
	if err != nil {
		log.Warn("outbox: settling event failed; it is delivered again once its lease expires", "err", err)
		outcome = "lost"
	}
	endDelivery(span, outcome, herr)
	if d.cfg.OnSettle != nil {
		d.cfg.OnSettle(outcome)
	}
}
