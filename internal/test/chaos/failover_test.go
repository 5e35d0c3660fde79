package chaos

import (
	"context"
	"crypto/sha256"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// The chaos round across failovers, with synchronous replication: three
// daemons on a pg_auto_failover formation (monitor, primary, two standbys),
// reaching it by a multi-host URL with target_session_attrs=read-write.
// Mid-run a planned switchover, then a SIGKILL of the primary node (its
// postmaster and its keeper, so that a standby takes over). Every
// invariant of the chaos drill holds, and every acknowledged submission
// exists.
func TestFailover(t *testing.T) {
	skipShort(t)
	t.Parallel() // mostly waits on the formation's health checks and promotions
	failoverRound(t, pgAutoctlBin(t), false)
}

// The same round with asynchronous replication, which may lose an
// acknowledged commit in a failover: it measures what was lost (a task, a
// ledger row, an effect run twice) instead of failing. It runs when
// CHAOS_FAILOVER_ASYNC=1.
func TestFailoverAsync(t *testing.T) {
	skipShort(t)
	if os.Getenv("CHAOS_FAILOVER_ASYNC") == "" {
		t.Skip("set CHAOS_FAILOVER_ASYNC=1 to measure the round with asynchronous replication")
	}
	failoverRound(t, pgAutoctlBin(t), true)
}

// failover is one fault the round caused and what followed.
type failover struct {
	what     string
	at       time.Time // the failure (or the switchover's start)
	promoted time.Time // the standby left recovery
}

func failoverRound(t *testing.T, bin string, async bool) {
	dir := worldDir(t)
	started := time.Now()
	f := startFormation(t, dir, bin, async)
	mode := map[bool]string{false: "synchronous", true: "asynchronous"}[async]
	t.Logf("pg_auto_failover formation up in %s (%s replication; the primary's synchronous_standby_names is %q)",
		time.Since(started).Round(100*time.Millisecond), mode, f.syncStandbys(f.primary()))
	w := &world{dir: dir, url: f.URL()}
	w.prepare(t)
	r := newRunIn(t, w)
	r.tasks, r.agents = envInt(t, "FAILOVER_TASKS", 200), envInt(t, "FAILOVER_AGENTS", 10)
	seconds := time.Duration(envInt(t, "FAILOVER_SECONDS", 20)) * time.Second
	r.lossy, r.violations = async, map[string]int{}
	r.startWorkers(w.url, nil)
	defer func() {
		for _, d := range r.daemons {
			d.stop()
		}
		if t.Failed() {
			r.report()
			t.Logf("the monitor's events, timed from the round's start:\n%s", f.events(r.start))
			for _, n := range f.all() {
				t.Logf("last lines of %s:\n%s", n.name, f.tail(n))
			}
		}
	}()

	r.start = time.Now()
	submitted := make(chan struct{})
	go func() {
		defer close(submitted)
		r.submit(seconds * 2 / 3)
	}()
	faults := r.failovers(f, seconds)
	<-submitted
	r.note("faults over; waiting for the work to finish")
	var settled time.Time
	r.supervise(func() bool {
		done, status := r.finished()
		// A round that lost a commit (a submission, a child) never reaches
		// the count: once nothing has been left to do for a while it is
		// over, and the checks below name what is missing.
		if !strings.Contains(status, " 0 unfinished, 0 notifications pending") {
			settled = time.Time{}
		} else if settled.IsZero() {
			settled = time.Now()
		}
		if !done && !settled.IsZero() && time.Since(settled) > 20*time.Second {
			r.note("nothing left to do, but %s", status)
			return true
		}
		return done
	}, 5*time.Minute)
	for _, d := range r.daemons {
		d.stop()
	}
	r.checkSubmitted()
	r.checkIDs(faults)
	r.checkStandbyWarning(async)
	r.check()
	r.reportFailovers(mode, faults)
}

// failovers runs the round's faults: at a quarter of d a planned
// switchover, at half a SIGKILL of the primary node, each waited out
// until the formation has a primary and its other nodes secondary again.
func (r *run) failovers(f *formation, d time.Duration) []failover {
	type promotion struct {
		n   *node
		at  time.Time
		err error
	}
	promoted := make(chan promotion, 1)
	watch := func(old *node) {
		go func() {
			n, at, err := f.promoted(old, 2*time.Minute)
			promoted <- promotion{n, at, err}
		}()
	}
	await := func() time.Time {
		p := <-promoted
		if p.err != nil {
			r.t.Fatal(p.err)
		}
		r.note("%s promoted", p.n.name)
		return p.at
	}

	r.waitUntil(d / 4)
	var out []failover
	old := f.waitPrimary()
	watch(old)
	fo := failover{what: "planned switchover", at: time.Now()}
	r.note("pg_autoctl perform switchover from %s", old.name)
	f.autoctlTries(3, "perform", "switchover", "--pgdata", old.pgdata)
	fo.promoted = await()
	out = append(out, fo)
	f.waitHealthy("after the switchover")
	r.note("switchover done; %s is a secondary", old.name)

	r.waitUntil(d / 2)
	old = f.waitPrimary()
	if !r.lossy {
		// Kill only a primary whose every acknowledged commit is on a
		// standby: what it took alone after the switchover is not
		// synchronous replication's to keep.
		took := f.waitCaughtUp(old)
		r.note("a standby of %s synchronous and caught up (waited %s)", old.name, took.Round(10*time.Millisecond))
	}
	watch(old)
	fo = failover{what: "SIGKILL of the primary", at: time.Now()}
	r.note("SIGKILL %s (pg_autoctl, its keeper, the postmaster)", old.name)
	f.kill(old)
	fo.promoted = await()
	out = append(out, fo)
	f.start(old, "run", "--pgdata", old.pgdata)
	r.note("restarted %s's pg_autoctl", old.name)
	f.waitHealthy("the killed node back as a secondary")
	r.note("%s is a secondary", old.name)
	return out
}

// waitUntil keeps the daemons up until at after the round's start.
func (r *run) waitUntil(at time.Duration) {
	for time.Since(r.start) < at {
		r.ensureAll()
		time.Sleep(200 * time.Millisecond) // the schedule's pace
	}
}

// checkSubmitted: every submission the harness had acknowledged exists.
func (r *run) checkSubmitted() {
	var n int
	must(r.t, r.w.db.QueryRow(context.Background(),
		`SELECT count(*) FROM tasks WHERE submission_key ~ '^chaos(-agent)?:[0-9]+$'`).Scan(&n))
	if want := r.tasks + r.agents; n != want {
		if r.lossy {
			r.violations["every acknowledged submission exists"] += want - n
			r.t.Logf("MEASURED every acknowledged submission exists: %d of %d acknowledged submissions were lost", want-n, want)
			return
		}
		r.t.Errorf("INVARIANT every acknowledged submission exists: %d tasks for %d acknowledged submissions", n, want)
		r.reportLost()
	}
}

// reportLost lists the acknowledged submissions that are missing, each
// with when it was acknowledged and the task id it was given, to read
// against the harness's timeline of faults.
func (r *run) reportLost() {
	rows, err := r.w.db.Query(context.Background(), `SELECT submission_key FROM tasks WHERE submission_key IS NOT NULL`)
	must(r.t, err)
	have := map[string]bool{}
	var k string
	_, err = pgx.ForEachRow(rows, []any{&k}, func() error { have[k] = true; return nil })
	must(r.t, err)
	r.mu.Lock()
	defer r.mu.Unlock()
	var lost []string
	for key, a := range r.acked {
		if !have[key] {
			lost = append(lost, sprintf("%6.1fs %s (task %d, duplicate %t)", a.at.Seconds(), key, a.id, a.dup))
		}
	}
	slices.Sort(lost)
	r.t.Logf("acknowledged and missing, by acknowledgement:\n%s", strings.Join(lost, "\n"))
}

// checkIDs: no two submissions were given one task id, and every
// submission acknowledged after a promotion got an id above the clock at
// the failure (in microseconds), where the first connection to the
// promoted server moved the ids (migration 00040): the ids a lost commit
// used are never issued again. A submission whose first try committed
// before the failure and was answered after it (a duplicate) keeps its
// id. An acknowledgement from a primary that took writes after its
// standby's promotion (asynchronous replication) can be below the floor,
// so there the floor is measured.
func (r *run) checkIDs(faults []failover) {
	r.mu.Lock()
	acked := maps.Clone(r.acked)
	r.mu.Unlock()
	byID := map[int64]string{}
	for key, a := range acked {
		if other, ok := byID[a.id]; ok {
			r.t.Errorf("INVARIANT no id issued twice: task %d was acknowledged for %s and for %s", a.id, other, key)
		}
		byID[a.id] = key
		var floor int64
		for _, fo := range faults {
			if r.start.Add(a.at).After(fo.promoted) {
				floor = fo.at.UnixMicro()
			}
		}
		if a.id < floor && !a.dup {
			const invariant = "ids advance at a promotion"
			msg := sprintf("%s, acknowledged %.1fs into the round, is task %d, below %d", key, a.at.Seconds(), a.id, floor)
			if r.lossy {
				r.violations[invariant]++
				r.t.Logf("MEASURED %s: %s", invariant, msg)
				continue
			}
			r.t.Errorf("INVARIANT %s: %s", invariant, msg)
		}
	}
	var top int64
	for id := range byID {
		top = max(top, id)
	}
	r.note("ids: %d submissions, %d distinct task ids, the highest %d", len(acked), len(byID), top)
}

// checkStandbyWarning: each daemon, whose MCP tools are unsafe, warned at
// start of the missing synchronous standby with asynchronous replication,
// and not with synchronous (where none started while a node was down).
func (r *run) checkStandbyWarning(async bool) {
	for _, d := range r.daemons {
		b, err := os.ReadFile(d.log)
		must(r.t, err)
		n := strings.Count(string(b), "no synchronous standby")
		switch {
		case async && n != d.starts:
			r.t.Errorf("%s started %d times with asynchronous replication and warned %d times of no synchronous standby", d.name, d.starts, n)
		case !async && d.starts == 1 && n != 0:
			r.t.Errorf("%s warned of no synchronous standby with synchronous replication", d.name)
		}
	}
}

// reportFailovers logs each failover's times — to the standby's promotion
// and to the first claim after it — and the effects per intent.
func (r *run) reportFailovers(mode string, faults []failover) {
	ctx := context.Background()
	for _, fo := range faults {
		var first *time.Time
		must(r.t, r.w.db.QueryRow(ctx, `SELECT min(started_at) FROM attempt_records WHERE started_at >= $1`, fo.promoted).Scan(&first))
		claim := "none"
		if first != nil {
			claim = first.Sub(fo.at).Round(10 * time.Millisecond).String()
		}
		r.t.Logf("FAILOVER %s (%s replication): standby promoted %s after the failure, first claim on it %s after",
			fo.what, mode, fo.promoted.Sub(fo.at).Round(10*time.Millisecond), claim)
	}
	keyed := map[int]int{} // effects → intents with that many
	byBody := r.down.EffectsByBody()
	for i := range r.tasks {
		keyed[byBody[sha256.Sum256([]byte(sprintf(`{"task":%d}`, i)))]]++
	}
	for j := range r.agents {
		keyed[byBody[sha256.Sum256([]byte(sprintf(`{"agent":%d}`, j)))]]++
	}
	charges := map[string]int{}
	b, err := os.ReadFile(r.mcpLog)
	must(r.t, err)
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if tool, key, _ := strings.Cut(line, " "); tool == "charge" {
			charges[key]++
		}
	}
	unsafe := map[int]int{}
	for _, n := range charges {
		unsafe[n]++
	}
	var retried, expired int
	must(r.t, r.w.db.QueryRow(ctx, `SELECT count(*) FILTER (WHERE outcome = 'retry'), count(*) FILTER (WHERE outcome = 'lease_expired')
		FROM attempt_records`).Scan(&retried, &expired))
	rows, err := r.w.db.Query(ctx, `SELECT left(coalesce(error, ''), 160), count(*) FROM attempt_records WHERE outcome = 'retry'
		GROUP BY 1 ORDER BY 2 DESC LIMIT 5`)
	must(r.t, err)
	for rows.Next() {
		var e string
		var n int
		must(r.t, rows.Scan(&e, &n))
		r.t.Logf("RETRIED %d attempts: %s", n, e)
	}
	rows.Close()
	// What a lost commit left: a parent without its child, with what its
	// ledger holds.
	rows, err = r.w.db.Query(ctx, `SELECT t.id, t.submission_key, t.state,
		(SELECT string_agg(l.operation || ' ' || l.state, ', ' ORDER BY l.generation, l.seq) FROM ledger l WHERE l.task_id = t.id)
		FROM tasks t WHERE t.kind = 'steps' AND NOT EXISTS (SELECT FROM tasks c WHERE c.kind = 'echo' AND c.payload->>'parent' = split_part(t.submission_key, ':', 2))`)
	must(r.t, err)
	for rows.Next() {
		var id int64
		var key, state string
		var ledger *string
		must(r.t, rows.Scan(&id, &key, &state, &ledger))
		r.t.Logf("CHILDLESS task %d (%s) is %s; its ledger: %v", id, key, state, deref(ledger))
	}
	rows.Close()
	r.t.Logf("EFFECTS (%s replication): keyed POSTs per intent %v (effects → intents); unsafe MCP charges per key %v; "+
		"attempts retried %d, leases expired %d; invariants broken %v", mode, keyed, unsafe, retried, expired, r.violations)
}

func deref(s *string) string {
	if s == nil {
		return "empty"
	}
	return *s
}
