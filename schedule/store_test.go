package schedule_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/schedule"
)

// Invalid schedules are refused naming the field, and nothing is stored.
func TestAddValidation(t *testing.T) {
	t.Parallel()
	e := newEnv(t, utc("2026-01-10T03:10:00Z"))
	ctx := context.Background()
	good := schedule.Schedule{Name: "ok", Spec: "0 * * * *", Kind: "report"}
	for _, tc := range []struct {
		field string
		edit  func(*schedule.Schedule)
	}{
		{"name", func(s *schedule.Schedule) { s.Name = "" }},
		{"name", func(s *schedule.Schedule) { s.Name = "Has_Upper" }},
		{"name", func(s *schedule.Schedule) { s.Name = "-dash-first" }},
		{"spec", func(s *schedule.Schedule) { s.Spec = "" }},
		{"spec", func(s *schedule.Schedule) { s.Spec = "61 * * * *" }},
		{"spec", func(s *schedule.Schedule) { s.Spec = "every hour" }},
		{"spec", func(s *schedule.Schedule) { s.Spec = "@fortnightly" }},
		{"spec", func(s *schedule.Schedule) { s.Spec = "CRON_TZ=Europe/Paris 0 9 * * *" }},
		{"spec", func(s *schedule.Schedule) { s.Spec = "TZ=UTC" }},
		{"spec", func(s *schedule.Schedule) { s.Spec = "0 0 30 2 *" }},    // never fires
		{"spec", func(s *schedule.Schedule) { s.Spec = "@every 87600h" }}, // first slot ten years away
		{"timezone", func(s *schedule.Schedule) { s.Timezone = "Mars/Olympus" }},
		{"timezone", func(s *schedule.Schedule) { s.Timezone = "Local" }},
		{"missed", func(s *schedule.Schedule) { s.Missed = "run-twice" }},
		{"kind", func(s *schedule.Schedule) { s.Kind = "" }},
		{"kind", func(s *schedule.Schedule) { s.Kind = "two words" }},
		{"payload", func(s *schedule.Schedule) { s.Payload = json.RawMessage(`{"a":`) }},
		{"queue", func(s *schedule.Schedule) { s.Queue = "a queue" }},
		{"tenant", func(s *schedule.Schedule) { s.Tenant = "a/b" }},
		{"priority", func(s *schedule.Schedule) { s.Priority = 101 }},
		{"max_attempts", func(s *schedule.Schedule) { s.MaxAttempts = -1 }},
	} {
		sc := good
		tc.edit(&sc)
		_, err := e.store.Add(ctx, sc)
		var ie *agentledger.InvalidError
		if !errors.Is(err, agentledger.ErrInvalid) || !errors.As(err, &ie) || ie.Field != tc.field {
			t.Errorf("%+v: %v, want an invalid %s", sc, err, tc.field)
		}
	}
	if list, err := e.store.List(ctx); err != nil || len(list) != 0 {
		t.Fatalf("stored after invalid adds: %+v %v", list, err)
	}

	// Defaults, and the first fire: the first slot after now.
	got := e.add(good)
	if got.Tenant != "default" || got.Queue != "default" || got.Timezone != "UTC" || got.Missed != schedule.MissedSkip ||
		got.MaxAttempts != 25 || string(got.Payload) != "{}" || got.Paused || !timeIs(got.NextFireAt, "2026-01-10T04:00:00Z") ||
		got.LastFireAt != nil || !got.CreatedAt.Equal(utc("2026-01-10T03:10:00Z")) {
		t.Fatalf("added %+v next %s", got, show(got.NextFireAt))
	}
	// Six fields (seconds first) and descriptors are specs too.
	for name, spec := range map[string]string{"secs": "30 15 * * * *", "hourly": "@hourly", "every": "@every 90s"} {
		e.add(schedule.Schedule{Name: name, Spec: spec, Kind: "report"})
	}
	for name, want := range map[string]string{"secs": "2026-01-10T03:15:30Z", "hourly": "2026-01-10T04:00:00Z", "every": "2026-01-10T03:11:30Z"} {
		if got := e.get(name); !timeIs(got.NextFireAt, want) {
			t.Errorf("%s (%s): next fire %s, want %s", name, got.Spec, show(got.NextFireAt), want)
		}
	}

	_, err := e.store.Add(ctx, schedule.Schedule{Name: "ok", Spec: "@daily", Kind: "other"})
	if !errors.Is(err, agentledger.ErrConflict) {
		t.Fatalf("duplicate name: %v, want ErrConflict", err)
	}
	if got := e.get("ok"); got.Spec != "0 * * * *" || got.Kind != "report" {
		t.Fatalf("duplicate add changed the schedule: %+v", got)
	}
}

// A paused schedule fires nothing; resuming starts again from now, so the
// slots that passed while it was paused never fire, even under run-once.
func TestPauseResumeRemove(t *testing.T) {
	t.Parallel()
	e := newEnv(t, utc("2026-01-10T03:10:00Z"))
	ctx := context.Background()
	e.add(schedule.Schedule{Name: "hourly", Spec: "0 * * * *", Kind: "report", Missed: schedule.MissedRunOnce})

	p, err := e.store.Pause(ctx, "hourly")
	if err != nil || !p.Paused || p.NextFireAt != nil {
		t.Fatalf("pause: %+v %v", p, err)
	}
	if again, err := e.store.Pause(ctx, "hourly"); err != nil || !again.UpdatedAt.Equal(p.UpdatedAt) {
		t.Fatalf("pause twice: %+v %v", again, err)
	}
	e.clock.Set(utc("2026-01-10T06:00:30Z")) // 04:00, 05:00 and 06:00 pass paused
	if n := e.runOnce(e.sched); n != 0 {
		t.Fatalf("a paused schedule fired (%d)", n)
	}
	r, err := e.store.Resume(ctx, "hourly")
	if err != nil || r.Paused || !timeIs(r.NextFireAt, "2026-01-10T07:00:00Z") {
		t.Fatalf("resume: %+v next %s, %v", r, show(r.NextFireAt), err)
	}
	if n := e.runOnce(e.sched); n != 0 || len(tasks(t, e.db, "hourly")) != 0 {
		t.Fatalf("resumed schedule fired its paused slots")
	}
	// Resuming a running schedule changes nothing.
	e.clock.Set(utc("2026-01-10T07:30:00Z"))
	if again, err := e.store.Resume(ctx, "hourly"); err != nil || !timeIs(again.NextFireAt, "2026-01-10T07:00:00Z") {
		t.Fatalf("resume twice: next %s, %v", show(again.NextFireAt), err)
	}

	if err := e.store.Remove(ctx, "hourly"); err != nil {
		t.Fatal(err)
	}
	if n := e.runOnce(e.sched); n != 0 {
		t.Fatalf("a removed schedule fired")
	}
	if err := e.store.Remove(ctx, "hourly"); !errors.Is(err, agentledger.ErrNotFound) {
		t.Fatalf("remove twice: %v", err)
	}
	for what, f := range map[string]func() error{
		"get":    func() error { _, err := e.store.Get(ctx, "hourly"); return err },
		"pause":  func() error { _, err := e.store.Pause(ctx, "hourly"); return err },
		"resume": func() error { _, err := e.store.Resume(ctx, "hourly"); return err },
	} {
		if err := f(); !errors.Is(err, agentledger.ErrNotFound) {
			t.Errorf("%s a removed schedule: %v, want ErrNotFound", what, err)
		}
	}

	// Added paused: no next fire until resumed.
	e.clock.Set(utc("2026-01-10T08:10:00Z"))
	if p := e.add(schedule.Schedule{Name: "later", Spec: "@every 1m", Kind: "report", Paused: true}); p.NextFireAt != nil || !p.Paused {
		t.Fatalf("added paused: %+v", p)
	}
	e.clock.Set(utc("2026-01-10T08:20:00Z"))
	if r, err := e.store.Resume(ctx, "later"); err != nil || !timeIs(r.NextFireAt, "2026-01-10T08:21:00Z") {
		t.Fatalf("resume: next %s, %v", show(r.NextFireAt), err)
	}
}

// Next reads the spec in the schedule's zone.
func TestNext(t *testing.T) {
	t.Parallel()
	sc := schedule.Schedule{Spec: "0 9 * * *", Timezone: "Europe/Paris"}
	for from, want := range map[string]string{
		"2026-01-15T07:00:00Z": "2026-01-15T08:00:00Z", // CET, UTC+1
		"2026-01-15T08:00:00Z": "2026-01-16T08:00:00Z", // strictly after
		"2026-07-15T06:00:00Z": "2026-07-15T07:00:00Z", // CEST, UTC+2
	} {
		got, err := sc.Next(utc(from))
		if err != nil || !got.Equal(utc(want)) {
			t.Errorf("Next(%s) = %s, %v; want %s", from, got.UTC().Format(time.RFC3339), err, want)
		}
	}
	// The five years a calendar spec's slot is looked for bound an
	// @every interval too: one that ends past them has no slot.
	from := utc("2026-01-15T07:00:00Z")
	for spec, want := range map[string]time.Time{
		"@every 43800h": from.Add(43800 * time.Hour), // 1825 days: within five years
		"@every 43848h": {},                          // 1827 days: past them
		"@every 87600h": {},
	} {
		got, err := (&schedule.Schedule{Spec: spec}).Next(from)
		if err != nil || !got.Equal(want) {
			t.Errorf("%s: Next(%s) = %s, %v; want %s", spec, from.Format(time.RFC3339), got, err, want)
		}
	}
	if _, err := (&schedule.Schedule{Spec: "nope"}).Next(time.Now()); !errors.Is(err, agentledger.ErrInvalid) {
		t.Errorf("Next of a bad spec: %v", err)
	}
	if k := schedule.Key("daily", utc("2026-01-15T09:00:00+01:00")); k != "cron:daily:2026-01-15T08:00:00Z" {
		t.Errorf("Key = %s", k)
	}
}
