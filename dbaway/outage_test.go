package dbaway_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/agentledger/agentledger/dbaway"
)

// records is a slog handler that hands each record to a channel.
type records chan slog.Record

func (c records) Enabled(context.Context, slog.Level) bool { return true }
func (c records) Handle(_ context.Context, r slog.Record) error {
	c <- r
	return nil
}
func (c records) WithAttrs([]slog.Attr) slog.Handler { return c }
func (c records) WithGroup(string) slog.Handler      { return c }

func attrs(r slog.Record) map[string]string {
	m := map[string]string{}
	r.Attrs(func(a slog.Attr) bool {
		m[a.Key] = a.Value.String()
		return true
	})
	return m
}

func TestAway(t *testing.T) {
	t.Parallel()
	for err, want := range map[error]bool{
		&pgconn.PgError{Code: "57P01"}:                          true, // terminated by a shutdown
		fmt.Errorf("claim: %w", &pgconn.PgError{Code: "08006"}): true,
		&pgconn.PgError{Code: "40001"}:                          false, // a conflict, retried
		&pgconn.PgError{Code: "23505"}:                          false,
		&net.OpError{Op: "dial", Err: errors.New("refused")}:    false, // an HTTP tool's call
		fmt.Errorf("x: %w", context.DeadlineExceeded):           false,
		errors.New("some other failure"):                        false,
	} {
		if got := dbaway.Away(err); got != want {
			t.Errorf("Away(%v) = %v, want %v", err, got, want)
		}
	}
}

// One line when the database goes, a reminder while it is away with the
// warnings held back since the last line, one line when it is back; other
// records pass.
func TestOutage(t *testing.T) {
	t.Parallel()
	out := make(records, 16)
	pings := make(chan error)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	o := dbaway.NewOutage(ctx, out, func(ctx context.Context) error {
		select {
		case err := <-pings:
			return err
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	o.Probe, o.Reminder = time.Millisecond, time.Nanosecond // a reminder after every failed ping
	log := slog.New(o.Handler()).With("worker", "w1")
	next := func() slog.Record {
		t.Helper()
		select {
		case r := <-out:
			return r
		case <-time.After(10 * time.Second):
			t.Fatal("no record within 10s")
			return slog.Record{}
		}
	}
	away := &pgconn.PgError{Code: "57P03", Message: "the database system is shutting down"}

	log.Warn("task failed", "err", errors.New("HTTP 502")) // not the database: passes
	if r := next(); r.Message != "task failed" {
		t.Fatalf("got %q", r.Message)
	}
	log.Info("claim failed", "err", away) // not a warning: passes
	if r := next(); r.Message != "claim failed" {
		t.Fatalf("got %q", r.Message)
	}
	log.Warn("claim failed", "err", away)
	r := next()
	if a := attrs(r); r.Level != slog.LevelWarn || r.Message[:len("database unreachable")] != "database unreachable" ||
		a["first"] != "claim failed" || a["err"] != away.Error() {
		t.Fatalf("the outage's first line: %s %q %v", r.Level, r.Message, a)
	}
	log.Warn("heartbeat failed", "err", away)
	log.Error("janitor: run failed", "err", fmt.Errorf("janitor: %w", away))
	log.Warn("task failed", "err", errors.New("HTTP 502")) // still passes
	if r := next(); r.Message != "task failed" {
		t.Fatalf("got %q", r.Message)
	}
	pings <- errors.New("connection refused")
	r = next()
	if a := attrs(r); r.Message != "database still unreachable" || a["held_back"] != "2" || a["err"] != "connection refused" {
		t.Fatalf("the reminder: %q %v", r.Message, a)
	}
	log.Warn("claim failed", "err", away)
	pings <- nil
	r = next()
	if a := attrs(r); r.Level != slog.LevelInfo || r.Message != "database reachable again" || a["held_back"] != "1" || a["outage"] == "" {
		t.Fatalf("the return: %s %q %v", r.Level, r.Message, a)
	}
	// Over: the next failure begins another outage.
	log.Warn("claim failed", "err", away)
	if r := next(); r.Message[:len("database unreachable")] != "database unreachable" {
		t.Fatalf("a second outage: %q", r.Message)
	}
	select {
	case r := <-out:
		t.Fatalf("an extra record: %q", r.Message)
	default:
	}
}
