package schedule_test

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/internal/test/testdb"
	"github.com/agentledger/agentledger/schedule"
)

// Three daemons run the same every-second schedule for ten seconds: each
// slot becomes exactly one task, and the slots run on without a gap.
func TestOneTaskPerSlotAcrossDaemons(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs for ten seconds")
	}
	const name, daemons, run = "tick", 3, 10 * time.Second
	url := testdb.URL(t)
	db := testdb.Open(t, url)
	sc, err := schedule.NewStore(db).Add(context.Background(), schedule.Schedule{
		Name: name, Spec: "@every 1s", Kind: "noop", Payload: []byte(`{"n": 1}`)})
	if err != nil {
		t.Fatal(err)
	}
	first := *sc.NextFireAt

	var mu sync.Mutex
	reported := map[time.Time]int{} // OnFire calls per slot, all daemons
	onFire := func(n string, slot time.Time, catchUp bool) {
		mu.Lock()
		defer mu.Unlock()
		reported[slot.UTC()]++
		if n != name || catchUp {
			t.Errorf("OnFire(%s, %s, catchUp %v)", n, slot, catchUp)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), run)
	defer cancel()
	var wg sync.WaitGroup
	scheds := make([]*schedule.Scheduler, daemons)
	for i := range scheds {
		s, err := schedule.NewScheduler(testdb.Open(t, url), schedule.Config{OnFire: onFire,
			Logger: slog.New(slog.DiscardHandler).With("daemon", i)})
		if err != nil {
			t.Fatal(err)
		}
		scheds[i] = s
		wg.Go(func() {
			if err := s.Run(ctx); err != nil {
				t.Errorf("daemon %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	var end time.Time
	if err := db.QueryRow(context.Background(), `SELECT now()`).Scan(&end); err != nil {
		t.Fatal(err)
	}

	ts := tasks(t, db, name)
	perKey, perSlot := map[string]int{}, map[time.Time]int{}
	var slots []time.Time
	for _, task := range ts {
		perKey[task.Key]++
		if task.Kind != "noop" || task.Payload != `{"n": 1}` {
			t.Errorf("task %d: kind %s payload %s", task.ID, task.Kind, task.Payload)
		}
		rest := strings.TrimPrefix(task.Key, "cron:"+name+":")
		slot, err := time.Parse(time.RFC3339, rest[:min(len(rest), len("2006-01-02T15:04:05Z"))])
		if err != nil {
			t.Fatalf("task %d: key %q names no slot: %v", task.ID, task.Key, err)
		}
		if task.Key != schedule.Key(name, slot) {
			t.Errorf("task %d: key %q, want %q", task.ID, task.Key, schedule.Key(name, slot))
		}
		if perSlot[slot]++; perSlot[slot] == 1 {
			slots = append(slots, slot)
		}
	}
	if len(slots) == 0 {
		t.Fatal("no tasks")
	}
	for slot, n := range perSlot {
		if n != 1 {
			t.Errorf("slot %s has %d tasks", slot.Format(time.TimeOnly), n)
		}
	}
	if len(perKey) != len(ts) {
		t.Errorf("%d tasks share %d keys", len(ts), len(perKey))
	}
	slices.SortFunc(slots, time.Time.Compare)
	var stats []schedule.Stats
	var made int64
	for _, s := range scheds {
		st := s.Stats()
		stats = append(stats, st)
		made += st.Fires + st.CatchUps
	}
	t.Logf("%d tasks for %d slots %s..%s (first due %s, stopped %s); daemons' stats %+v",
		len(ts), len(slots), slots[0].Format(time.TimeOnly), slots[len(slots)-1].Format(time.TimeOnly),
		first.UTC().Format(time.TimeOnly), end.UTC().Format("15:04:05.000"), stats)

	// Every slot from the first (or, if the daemons started late, the one
	// after) to the last that was due when they stopped, one second apart.
	if !slots[0].Equal(first) && !slots[0].Equal(first.Add(time.Second)) {
		t.Errorf("first task's slot %s, want %s (or the one after)", slots[0], first.UTC())
	}
	for i := 1; i < len(slots); i++ {
		if d := slots[i].Sub(slots[i-1]); d != time.Second {
			t.Errorf("gap of %s after slot %s", d, slots[i-1])
		}
	}
	if last := slots[len(slots)-1]; end.Sub(last) >= 2*time.Second {
		t.Errorf("last slot %s, but the daemons ran until %s", last, end.UTC())
	}
	if len(slots) < int(run/time.Second)-2 {
		t.Errorf("%d slots in %s", len(slots), run)
	}
	// Each task was reported once, by the daemon that created it.
	if made != int64(len(ts)) || len(reported) != len(slots) {
		t.Errorf("daemons report %d tasks for %d slots, the database holds %d for %d", made, len(reported), len(ts), len(slots))
	}
	for slot, n := range reported {
		if n != 1 {
			t.Errorf("slot %s reported %d times", slot, n)
		}
	}
}

// After downtime, the missed slots are skipped or run once, and the
// schedule waits for the first slot after now.
func TestMissedSlots(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		missed schedule.Missed
		at     string   // next_fire_at is 04:00
		want   []string // tasks' slots, "HH:MM" or "HH:MM catch-up"
		last   string
		stats  schedule.Stats
	}{
		// Slots 04:00 to 09:00 are due; 09:00 is 30 minutes late: all missed.
		{"skip-late", schedule.MissedSkip, "2026-01-10T09:30:00Z", nil, "",
			schedule.Stats{Skipped: 6}},
		{"run-once-late", schedule.MissedRunOnce, "2026-01-10T09:30:00Z", []string{"09:00 catch-up"}, "09:00",
			schedule.Stats{CatchUps: 1, Skipped: 5}},
		// 09:00 is 20 seconds late: on time; 04:00 to 08:00 missed.
		{"skip-on-time", schedule.MissedSkip, "2026-01-10T09:00:20Z", []string{"09:00"}, "09:00",
			schedule.Stats{Fires: 1, Skipped: 5}},
		{"run-once-on-time", schedule.MissedRunOnce, "2026-01-10T09:00:20Z", []string{"08:00 catch-up", "09:00"}, "09:00",
			schedule.Stats{Fires: 1, CatchUps: 1, Skipped: 4}},
		// Exactly the tolerance late is still on time.
		{"skip-at-tolerance", schedule.MissedSkip, "2026-01-10T09:01:00Z", []string{"09:00"}, "09:00",
			schedule.Stats{Fires: 1, Skipped: 5}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, utc("2026-01-10T03:10:00Z"))
			var fired []string
			s := e.scheduler(schedule.Config{OnFire: func(name string, slot time.Time, catchUp bool) {
				fired = append(fired, fmt.Sprintf("%s %s %v", name, slot.UTC().Format("15:04"), catchUp))
			}})
			e.add(schedule.Schedule{Name: "hourly", Spec: "0 * * * *", Kind: "report", Missed: tc.missed})
			e.clock.Set(utc(tc.at))
			if n := e.runOnce(s); n != 1 {
				t.Fatalf("fired %d schedules, want 1", n)
			}
			var want, wantFired []string
			for _, w := range tc.want {
				hm, catchUp := strings.CutSuffix(w, " catch-up")
				want = append(want, "cron:hourly:2026-01-10T"+hm+":00Z")
				wantFired = append(wantFired, fmt.Sprintf("hourly %s %v", hm, catchUp))
			}
			if got := keys(tasks(t, e.db, "hourly")); !slices.Equal(got, append([]string{}, want...)) {
				t.Errorf("tasks %q, want %q", got, want)
			}
			if !slices.Equal(fired, wantFired) {
				t.Errorf("OnFire %q, want %q", fired, wantFired)
			}
			if st := s.Stats(); st != tc.stats {
				t.Errorf("stats %+v, want %+v", st, tc.stats)
			}
			got := e.get("hourly")
			last := ""
			if tc.last != "" {
				last = "2026-01-10T" + tc.last + ":00Z"
			}
			if !timeIs(got.NextFireAt, "2026-01-10T10:00:00Z") || !timeIs(got.LastFireAt, last) {
				t.Errorf("next fire %s, last fire %s; want 10:00 and %q", show(got.NextFireAt), show(got.LastFireAt), tc.last)
			}
			// Nothing more is due until 10:00.
			if n := e.runOnce(s); n != 0 {
				t.Errorf("fired again")
			}
		})
	}
}

// A spec is read in the schedule's time zone: 09:00 in Paris is 08:00 UTC
// in winter, 07:00 UTC in summer.
func TestTimeZone(t *testing.T) {
	t.Parallel()
	e := newEnv(t, utc("2026-01-15T07:00:00Z"))
	sc := e.add(schedule.Schedule{Name: "paris", Spec: "0 9 * * *", Timezone: "Europe/Paris", Kind: "report"})
	if !timeIs(sc.NextFireAt, "2026-01-15T08:00:00Z") {
		t.Fatalf("next fire %s, want 08:00 UTC", show(sc.NextFireAt))
	}
	e.clock.Set(utc("2026-01-15T07:59:59Z"))
	if n := e.runOnce(e.sched); n != 0 {
		t.Fatalf("fired before 09:00 Paris time")
	}
	e.clock.Set(utc("2026-01-15T08:00:05Z"))
	if n := e.runOnce(e.sched); n != 1 {
		t.Fatalf("fired %d at 09:00:05 Paris time", n)
	}
	if got := keys(tasks(t, e.db, "paris")); !slices.Equal(got, []string{"cron:paris:2026-01-15T08:00:00Z"}) {
		t.Fatalf("tasks %q", got)
	}
	if got := e.get("paris"); !timeIs(got.NextFireAt, "2026-01-16T08:00:00Z") {
		t.Fatalf("next fire %s, want the next day 08:00 UTC", show(got.NextFireAt))
	}
	e.clock.Set(utc("2026-07-15T06:00:00Z"))
	if sc := e.add(schedule.Schedule{Name: "paris-summer", Spec: "0 9 * * *", Timezone: "Europe/Paris", Kind: "report"}); !timeIs(sc.NextFireAt, "2026-07-15T07:00:00Z") {
		t.Fatalf("summer: next fire %s, want 07:00 UTC", show(sc.NextFireAt))
	}
}

// Should a slot ever be handled twice — here its row is set back by hand
// after it fired — the submission key makes it one task: the second
// scheduler finds it and counts a duplicate.
func TestSlotHandledTwiceIsOneTask(t *testing.T) {
	t.Parallel()
	e := newEnv(t, utc("2026-01-10T03:10:00Z"))
	ctx := context.Background()
	e.add(schedule.Schedule{Name: "hourly", Spec: "0 * * * *", Kind: "report"})
	e.clock.Set(utc("2026-01-10T04:00:01Z"))
	a, b := e.sched, e.scheduler(schedule.Config{})
	if n := e.runOnce(a); n != 1 {
		t.Fatalf("a fired %d", n)
	}
	if _, err := e.db.Exec(ctx, `UPDATE schedules SET next_fire_at = '2026-01-10T04:00:00Z' WHERE name = 'hourly'`); err != nil {
		t.Fatal(err)
	}
	if n := e.runOnce(b); n != 1 {
		t.Fatalf("b fired %d", n)
	}
	if got := keys(tasks(t, e.db, "hourly")); !slices.Equal(got, []string{"cron:hourly:2026-01-10T04:00:00Z"}) {
		t.Fatalf("tasks %q", got)
	}
	if sa, sb := a.Stats(), b.Stats(); sa != (schedule.Stats{Fires: 1}) || sb != (schedule.Stats{Duplicates: 1}) {
		t.Fatalf("stats a %+v b %+v", sa, sb)
	}
	if got := e.get("hourly"); !timeIs(got.NextFireAt, "2026-01-10T05:00:00Z") {
		t.Fatalf("next fire %s", show(got.NextFireAt))
	}

	// A task of another request holding a slot's key cannot be fixed by
	// retrying: the slot is given up and the schedule moves on.
	e.clock.Set(utc("2026-01-10T05:00:01Z"))
	if _, err := claims.New(e.db).Enqueue(ctx, claims.EnqueueParams{Kind: "other",
		SubmissionKey: "cron:hourly:2026-01-10T05:00:00Z"}); err != nil {
		t.Fatal(err)
	}
	if n := e.runOnce(a); n != 1 {
		t.Fatalf("fired %d", n)
	}
	if got := e.get("hourly"); !timeIs(got.NextFireAt, "2026-01-10T06:00:00Z") {
		t.Fatalf("next fire %s", show(got.NextFireAt))
	}
	if st := a.Stats(); st != (schedule.Stats{Fires: 1}) {
		t.Fatalf("stats %+v", st)
	}
}

// Run wakes for a slot without waiting out its poll interval, and returns
// when its context ends.
func TestRunWakesAtNextFire(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	fired := make(chan time.Time, 1)
	s, err := schedule.NewScheduler(db, schedule.Config{PollInterval: time.Hour,
		OnFire: func(_ string, slot time.Time, _ bool) {
			select {
			case fired <- slot:
			default:
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	// Added before Run starts, so the first look-up sees it.
	sc, err := schedule.NewStore(db).Add(ctx, schedule.Schedule{Name: "soon", Spec: "@every 1s", Kind: "noop"})
	if err != nil {
		t.Fatal(err)
	}
	go func() { done <- s.Run(ctx) }()
	select {
	case slot := <-fired:
		if !slot.Equal(*sc.NextFireAt) {
			t.Errorf("fired slot %s, want %s", slot, sc.NextFireAt)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no fire within 10s, with a one-hour poll interval")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestConfig(t *testing.T) {
	t.Parallel()
	for _, cfg := range []schedule.Config{{Tolerance: -time.Second}, {PollInterval: -time.Second}} {
		if _, err := schedule.NewScheduler(nil, cfg); err == nil {
			t.Errorf("%+v accepted", cfg)
		}
	}
}

// A fire under way when the daemon stops is finished, not cut off: cut
// off in its commit, it could have created a task it never reported. The
// fire is held inside its transaction by another's uncommitted task under
// the slot's key; the context ends; the other rolls back.
func TestFireUnderWayFinishesAtStop(t *testing.T) {
	t.Parallel()
	e := newEnv(t, utc("2026-01-10T03:10:00Z"))
	bg := context.Background()
	e.add(schedule.Schedule{Name: "hourly", Spec: "0 * * * *", Kind: "report"})
	e.clock.Set(utc("2026-01-10T04:00:01Z"))

	other, err := e.db.Begin(bg)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Rollback(bg) //nolint:errcheck
	if _, err := claims.New(other).Enqueue(bg, claims.EnqueueParams{Kind: "report",
		SubmissionKey: "cron:hourly:2026-01-10T04:00:00Z"}); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(bg)
	type result struct {
		n   int
		err error
	}
	done := make(chan result, 1)
	go func() {
		n, err := e.sched.RunOnce(ctx)
		done <- result{n, err}
	}()
	// The fire's insert waits on the other transaction's row.
	deadline := time.Now().Add(30 * time.Second)
	for {
		var waiting bool
		if err := e.db.QueryRow(bg, `SELECT EXISTS (SELECT FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%claims.enqueue%')`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the fire never waited on the other transaction")
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := other.Rollback(bg); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil || r.n != 1 {
		t.Fatalf("RunOnce = %d, %v; want the fire under way finished", r.n, r.err)
	}
	if got := keys(tasks(t, e.db, "hourly")); !slices.Equal(got, []string{"cron:hourly:2026-01-10T04:00:00Z"}) {
		t.Fatalf("tasks %q", got)
	}
	if st := e.sched.Stats(); st != (schedule.Stats{Fires: 1}) {
		t.Fatalf("stats %+v", st)
	}
	if got := e.get("hourly"); !timeIs(got.NextFireAt, "2026-01-10T05:00:00Z") {
		t.Fatalf("next fire %s", show(got.NextFireAt))
	}
	// A context that has ended starts no fire.
	e.clock.Set(utc("2026-01-10T05:00:01Z"))
	if n, err := e.sched.RunOnce(ctx); n != 0 || err == nil {
		t.Fatalf("RunOnce after the end = %d, %v", n, err)
	}
}
