package chaos

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/agentledger/agentledger/agentledgertest/downstream"
	"github.com/agentledger/agentledger/claims"
)

// TestSagaChaos is issue 17's drill: three daemons under the fault
// schedule (SIGKILLs, a frozen daemon, a PostgreSQL restart, cut
// connections, effects whose answer is lost) run sagas — a keyed charge
// (undone by a refund of its id), a keyed reservation (undone by a
// release) and a shipment the downstream refuses (422, a permanent
// failure) for one task in three. Every saga ends succeeded or
// compensated, each charge and reservation took effect once, each refused
// saga was refunded and released once, in reverse order, with the ids of
// its own effects, and no other saga was. CHAOS_SAGAS sizes it.
func TestSagaChaos(t *testing.T) {
	r := newRun(t)
	r.tasks = envInt(t, "CHAOS_SAGAS", 300)
	seconds := envInt(t, "CHAOS_SECONDS", 15)
	r.down.SetRefuse(func(path string, body []byte) bool {
		return path == "/shipments" && bytes.Contains(body, []byte(`"address":"nowhere"`))
	})
	r.startFleet(r.w.url, nil, nil)
	defer func() {
		for _, d := range r.daemons {
			d.stop()
		}
		if r.t.Failed() {
			r.report()
		}
	}()

	r.start = time.Now()
	chaosDone, stopChaos := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(chaosDone)
		r.chaos(time.Duration(seconds)*time.Second, stopChaos)
	}()
	r.submitSagas(time.Duration(seconds) * time.Second * 2 / 3)
	<-chaosDone
	close(stopChaos)
	r.note("chaos over; waiting for the sagas to finish")
	r.supervise(func() bool { done, _ := r.sagasFinished(); return done }, 5*time.Minute)
	for _, d := range r.daemons {
		d.stop()
	}
	r.checkSagas()
}

// refused reports whether saga i's shipment is refused.
func refused(i int) bool { return i%3 == 0 }

// submitSagas enqueues r.tasks sagas spread over d.
func (r *run) submitSagas(d time.Duration) {
	ctx := context.Background()
	store := claims.New(r.w.db)
	for i := range r.tasks {
		address := "1 Main Street"
		if refused(i) {
			address = "nowhere"
		}
		u := r.down.URL
		payload := sprintf(`{"steps":[
			{"tool":"http_request","args":{"method":"POST","url":"%s/charges","body":{"charge":%d,"amount":100}},
			 "compensate":{"tool":"http_request","args":{"method":"POST","url":"%s/refunds","body":{"refund":"${self.body.id}","saga":%d}}}},
			{"tool":"http_request","args":{"method":"POST","url":"%s/reservations","body":{"reserve":%d,"charge":"${steps.0.body.id}"}},
			 "compensate":{"tool":"http_request","args":{"method":"POST","url":"%s/releases","body":{"release":"${self.body.id}","saga":%d}}}},
			{"tool":"http_request","args":{"method":"POST","url":"%s/shipments","body":{"ship":%d,"address":%q}}}]}`,
			u, i, u, i, u, i, u, i, u, i, address)
		p := claims.EnqueueParams{Kind: "steps", Payload: json.RawMessage(payload), SubmissionKey: sprintf("saga:%d", i), MaxAttempts: 1000}
		for {
			_, err := store.Enqueue(ctx, p)
			if err == nil {
				break
			}
			// PostgreSQL may be restarting: submit again (the key makes
			// it one task).
			time.Sleep(100 * time.Millisecond)
		}
		time.Sleep(d / time.Duration(r.tasks))
	}
	r.note("submitted %d sagas", r.tasks)
}

// sagasFinished reports whether every saga ended, and what is left.
func (r *run) sagasFinished() (bool, string) {
	var total, open int
	err := r.w.db.QueryRow(context.Background(), `SELECT count(*),
		count(*) FILTER (WHERE state NOT IN ('succeeded', 'compensated', 'dead', 'cancelled', 'needs_attention'))
		FROM tasks`).Scan(&total, &open)
	if err != nil {
		return false, err.Error()
	}
	return total >= r.tasks && open == 0, sprintf("%d of %d sagas, %d unfinished", total, r.tasks, open)
}

// sagaEffects are one saga's business effects at the downstream, by kind.
type sagaEffects struct {
	charges, reservations, shipments, refunds, releases []downstream.Record
}

// of is the list of effects at path.
func (e *sagaEffects) of(path string) *[]downstream.Record {
	switch path {
	case "/charges":
		return &e.charges
	case "/reservations":
		return &e.reservations
	case "/shipments":
		return &e.shipments
	case "/refunds":
		return &e.refunds
	}
	return &e.releases
}

// checkSagas asserts the sagas' invariants and reports the figures.
func (r *run) checkSagas() {
	t := r.t
	ctx := context.Background()
	fail := func(invariant, format string, a ...any) {
		t.Errorf("INVARIANT %s: %s", invariant, sprintf(format, a...))
	}

	// Every saga finished: succeeded, or compensated after its refused
	// shipment.
	rows, err := r.w.db.Query(ctx, `SELECT submission_key, state, coalesce(compensation, ''), coalesce(last_error, '') FROM tasks`)
	must(t, err)
	seen := 0
	for rows.Next() {
		var key, state, why, lastErr string
		must(t, rows.Scan(&key, &state, &why, &lastErr))
		seen++
		i := atoi(strings.TrimPrefix(key, "saga:"))
		want, wantWhy := "succeeded", ""
		if refused(i) {
			want, wantWhy = "compensated", "failed"
		}
		if state != want || why != wantWhy {
			fail("every saga finished", "%s is %s (compensation %q), want %s (%q): %s", key, state, why, want, wantWhy, lastErr)
		}
	}
	must(t, rows.Err())
	rows.Close()
	if seen != r.tasks {
		fail("every saga finished", "%d tasks for %d sagas", seen, r.tasks)
	}

	// The business effects, per saga: each record is one Idempotency-Key,
	// so an intent performed under two keys shows as two records.
	records := r.down.Records()
	by := make([]sagaEffects, r.tasks)
	total := map[string]int{}
	for _, rec := range records {
		// The field that names the saga, by path.
		name := map[string]string{"/charges": "charge", "/reservations": "reserve", "/shipments": "ship",
			"/refunds": "saga", "/releases": "saga"}[rec.Path]
		var b map[string]json.RawMessage
		i := -1
		if json.Unmarshal(rec.Body, &b) != nil || json.Unmarshal(b[name], &i) != nil || i < 0 || i >= r.tasks {
			fail("every effect is a saga's", "%s %s", rec.Path, rec.Body)
			continue
		}
		list := by[i].of(rec.Path)
		*list = append(*list, rec)
		total[rec.Path]++
	}
	for i, e := range by {
		wantUndo, wantShip := 0, 1
		if refused(i) {
			wantUndo, wantShip = 1, 0
		}
		if len(e.charges) != 1 || len(e.reservations) != 1 || len(e.shipments) != wantShip {
			fail("one business effect per intended effect", "saga %d: %d charges, %d reservations, %d shipments (want 1, 1, %d)",
				i, len(e.charges), len(e.reservations), len(e.shipments), wantShip)
			continue
		}
		if len(e.refunds) != wantUndo || len(e.releases) != wantUndo {
			fail("one compensation per completed step of a failed saga, none otherwise", "saga %d: %d refunds, %d releases (want %d each)",
				i, len(e.refunds), len(e.releases), wantUndo)
			continue
		}
		charge, reservation := id(e.charges[0]), id(e.reservations[0])
		if got := field(e.reservations[0], "charge"); got != charge {
			fail("a step reads its own saga's results", "saga %d's reservation names charge %q, its charge is %s", i, got, charge)
		}
		if wantUndo == 0 {
			continue
		}
		refund, release := e.refunds[0], e.releases[0]
		if got := field(refund, "refund"); got != charge {
			fail("a refund carries its own charge's id", "saga %d refunded %q, its charge is %s", i, got, charge)
		}
		if got := field(release, "release"); got != reservation {
			fail("a release carries its own reservation's id", "saga %d released %q, its reservation is %s", i, got, reservation)
		}
		if release.N > refund.N {
			fail("compensations run newest first", "saga %d was refunded (effect %d) before its release (effect %d)", i, refund.N, release.N)
		}
	}
	r.checkLeases(fail)

	failed := 0
	for i := range r.tasks {
		if refused(i) {
			failed++
		}
	}
	// A compensation attempt is one after the attempt that ended the
	// forward path (outcome compensating): lease tokens only grow.
	var leaseLosses, undoLosses, attempts int
	must(t, r.w.db.QueryRow(ctx, `SELECT
		(SELECT count(*) FROM attempt_records WHERE outcome = 'lease_expired'),
		(SELECT count(*) FROM attempt_records a WHERE outcome = 'lease_expired' AND EXISTS (SELECT 1 FROM attempt_records c
			WHERE c.task_id = a.task_id AND c.outcome = 'compensating' AND c.lease_token < a.lease_token)),
		(SELECT count(*) FROM attempt_records)`).Scan(&leaseLosses, &undoLosses, &attempts))
	starts := 0
	for _, d := range r.daemons {
		starts += d.starts
	}
	r.note("done")
	t.Logf("sagas: %d (%d refused at shipment) in %s; %d SIGKILLs, daemon starts %d; attempts %d, lease losses %d (%d in compensations); "+
		"downstream: %d hits, %d business effects (%d charges, %d reservations, %d shipments, %d refunds, %d releases), %d refusals",
		r.tasks, failed, time.Since(r.start).Round(time.Second), r.kills, starts, attempts, leaseLosses, undoLosses,
		r.down.Hits(), len(records), total["/charges"], total["/reservations"], total["/shipments"], total["/refunds"],
		total["/releases"], r.down.Refused())
	r.mu.Lock()
	t.Logf("what the harness did:\n%s", strings.Join(r.events, "\n"))
	r.mu.Unlock()
}

// id is the id the downstream answered an effect with.
func id(rec downstream.Record) string { return sprintf("eff_%d", rec.N) }

// field is a string field of an effect's body.
func field(rec downstream.Record, name string) string {
	var m map[string]any
	_ = json.Unmarshal(rec.Body, &m)
	s, _ := m[name].(string)
	return s
}
