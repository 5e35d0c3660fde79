package dbaway

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// Defaults of an Outage's timing.
const (
	// DefaultOutageReminder is how often an outage that lasts is logged
	// again.
	DefaultOutageReminder = time.Minute
	// DefaultOutageProbe is how often the database is pinged while it is
	// away, to log its return.
	DefaultOutageProbe = time.Second
)

// Outage is the one tracker of the database being away for a process's
// loops (the workers' claims, the lease keeper, LISTEN, the dispatcher, the
// scheduler, the janitor, the registry's announcements, the limiter). Each
// of them logs its own failed tries, each try; through Handler those
// warnings become one line when the database goes, a reminder every
// Reminder while it is away (with how many warnings were held back), and
// one line when it is back, with the outage's length. Its return is seen
// by pinging it every Probe from the first warning on.
type Outage struct {
	// Reminder is how often a lasting outage is logged again; zero is
	// DefaultOutageReminder.
	Reminder time.Duration
	// Probe is how often the database is pinged while away; zero is
	// DefaultOutageProbe.
	Probe time.Duration

	ctx  context.Context
	out  slog.Handler // where the outage's own lines go
	ping func(context.Context) error

	mu       sync.Mutex
	since    time.Time // zero: the database is not known to be away
	held     int       // warnings held back since the last line
	reminded time.Time
}

// NewOutage returns the tracker of a database that ping reaches, logging
// to h; it pings only during an outage, and not after ctx ends.
func NewOutage(ctx context.Context, h slog.Handler, ping func(context.Context) error) *Outage {
	return &Outage{ctx: ctx, out: h, ping: ping}
}

// Handler wraps o's handler: a warning or error whose error is the
// database being away (Away) begins an outage, and is held back with the
// others during it; every other record passes.
func (o *Outage) Handler() slog.Handler { return &outageHandler{o: o, next: o.out} }

// Away reports whether err comes from the database connection and says it
// is away for now (Unavailable): the server cannot be reached, cut the
// session or is starting or stopping. A conflict (serialization failure,
// deadlock) is no outage, nor is a network error of anything else (an
// HTTP tool's call).
func Away(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code != "40001" && pgErr.Code != "40P01" && ServerUnavailable(pgErr.Code)
	}
	var connectErr *pgconn.ConnectError
	var fromConn interface{ SafeToRetry() bool } // pgconn's errors of a session
	return Unavailable(err) && (errors.As(err, &connectErr) || errors.As(err, &fromConn) ||
		errors.Is(err, pgconn.ErrConnClosed))
}

// hold decides a record that names err: false lets it pass.
func (o *Outage) hold(err error, msg string) bool {
	if !Away(err) {
		return false
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.since.IsZero() {
		o.held++
		return true
	}
	now := time.Now()
	o.since, o.held, o.reminded = now, 0, now
	o.emit(slog.LevelWarn, "database unreachable: the daemon's loops retry until it is back; their warnings are held back meanwhile",
		slog.String("first", msg), slog.String("err", err.Error()))
	go o.watch()
	return true
}

// watch pings the database until it answers, reminding of the outage
// every Reminder, then logs its return.
func (o *Outage) watch() {
	probe, remind := o.Probe, o.Reminder
	if probe <= 0 {
		probe = DefaultOutageProbe
	}
	if remind <= 0 {
		remind = DefaultOutageReminder
	}
	t := time.NewTicker(probe)
	defer t.Stop()
	for {
		select {
		case <-o.ctx.Done():
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(o.ctx, max(probe, 2*time.Second))
		err := o.ping(ctx)
		cancel()
		if o.ctx.Err() != nil {
			return
		}
		o.mu.Lock()
		now := time.Now()
		switch {
		case err == nil:
			o.emit(slog.LevelInfo, "database reachable again", slog.Duration("outage", now.Sub(o.since).Round(time.Millisecond)),
				slog.Int("held_back", o.held))
			o.since, o.held = time.Time{}, 0
			o.mu.Unlock()
			return
		case now.Sub(o.reminded) >= remind:
			o.emit(slog.LevelWarn, "database still unreachable", slog.Duration("for", now.Sub(o.since).Round(time.Second)),
				slog.Int("held_back", o.held), slog.String("err", err.Error()))
			o.reminded, o.held = now, 0
		}
		o.mu.Unlock()
	}
}

// emit logs one of the outage's own lines; the caller holds o.mu.
func (o *Outage) emit(level slog.Level, msg string, attrs ...slog.Attr) {
	if !o.out.Enabled(o.ctx, level) {
		return
	}
	r := slog.NewRecord(time.Now(), level, msg, 0)
	r.AddAttrs(attrs...)
	_ = o.out.Handle(context.WithoutCancel(o.ctx), r)
}

// outageHandler is Outage.Handler: next with the attributes and groups
// the logger added.
type outageHandler struct {
	o    *Outage
	next slog.Handler
}

func (h *outageHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.next.Enabled(ctx, l)
}

func (h *outageHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Level >= slog.LevelWarn {
		var err error
		r.Attrs(func(a slog.Attr) bool {
			if e, ok := a.Value.Any().(error); ok && a.Value.Kind() == slog.KindAny {
				err = e
				return false
			}
			return true
		})
		if err != nil && h.o.hold(err, r.Message) {
			return nil
		}
	}
	return h.next.Handle(ctx, r)
}

func (h *outageHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &outageHandler{o: h.o, next: h.next.WithAttrs(as)}
}

func (h *outageHandler) WithGroup(name string) slog.Handler {
	return &outageHandler{o: h.o, next: h.next.WithGroup(name)}
}
