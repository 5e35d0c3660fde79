package chaos

import (
	"context"
	"crypto/sha256"
	"os"
	"regexp"
	"strings"
	"time"
)

// check asserts the invariants and reports the figures; every failure
// names the invariant and the task.
func (r *run) check() {
	t := r.t
	ctx := context.Background()
	fail := func(invariant, format string, a ...any) {
		if r.lossy {
			r.violations[invariant]++
			t.Logf("MEASURED %s: %s", invariant, sprintf(format, a...))
			return
		}
		t.Errorf("INVARIANT %s: %s", invariant, sprintf(format, a...))
	}

	// Every task finished, and succeeded — but an agent task whose
	// destructive MCP charge was in flight when its daemon died: that one
	// waits for an operator (checked with the charges below).
	parked := map[int64]bool{}
	rows, err := r.w.db.Query(ctx, `SELECT id, kind, state, coalesce(last_error, '') FROM tasks WHERE state <> 'succeeded' ORDER BY id`)
	must(t, err)
	for rows.Next() {
		var id int64
		var kind, state, lastErr string
		must(t, rows.Scan(&id, &kind, &state, &lastErr))
		if kind == "agent" && state == "needs_attention" {
			parked[id] = true
			continue
		}
		fail("every task finished", "task %d (%s) is %s: %s", id, kind, state, lastErr)
	}
	rows.Close()

	// One child per parent.
	children := map[int]int{}
	rows, err = r.w.db.Query(ctx, `SELECT (payload->>'parent')::int FROM tasks WHERE kind = 'echo'`)
	must(t, err)
	for rows.Next() {
		var p int
		must(t, rows.Scan(&p))
		children[p]++
	}
	rows.Close()
	for i := range r.tasks {
		if children[i] != 1 {
			fail("one child per parent", "parent chaos:%d has %d children", i, children[i])
		}
	}

	// Exactly one business effect per intended effect.
	byBody := r.down.EffectsByBody()
	for i := range r.tasks {
		if n := byBody[sha256.Sum256([]byte(sprintf(`{"task":%d}`, i)))]; n != 1 {
			fail("one business effect per intended effect", "task chaos:%d's POST took effect %d times", i, n)
		}
	}
	for j := range r.agents {
		if n := byBody[sha256.Sum256([]byte(sprintf(`{"agent":%d}`, j)))]; n != 1 {
			fail("one business effect per intended effect", "agent task chaos-agent:%d's POST took effect %d times", j, n)
		}
	}
	// Every agent's MCP reserve call took effect under one key: the server
	// may have got a call again after a kill (an idempotent tool is sent
	// again under the same key), never a second key for one intent. The
	// destructive charge is never sent twice: each key at most once.
	b, err := os.ReadFile(r.mcpLog)
	must(t, err)
	reserves, charges := map[string]int{}, map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		switch tool, key, _ := strings.Cut(line, " "); tool {
		case "reserve":
			reserves[key]++
		case "charge":
			charges[key]++
		}
	}
	if len(reserves) != r.agents {
		fail("one business effect per intended effect", "the MCP server saw %d reserve keys for %d agent tasks", len(reserves), r.agents)
	}
	resent := 0
	for _, n := range reserves {
		resent += n - 1
	}
	for key, n := range charges {
		if n > 1 {
			fail("an unsafe effect is never sent twice", "the MCP charge under key %s was sent %d times", key, n)
		}
	}
	r.checkCharges(charges, parked, fail)
	r.note("MCP: %d reserve keys for %d agent tasks, %d calls sent again under their key; %d charges, %d agent tasks parked",
		len(reserves), r.agents, resent, len(charges), len(parked))
	if got, want := r.down.Effects(), int64(r.tasks+r.agents); got != want {
		fail("one business effect per intended effect", "downstream has %d business effects, want %d", got, want)
	}

	// One Slack message per notify call and per (task, rule).
	toolMsgs := map[int]int{}
	ruleMsgs := map[int64]int{}
	toolText := regexp.MustCompile(`^chaos task (\d+) done$`)
	ruleTitle := regexp.MustCompile(`Task (\d+) `)
	msgs := r.slack.Messages(r.channel)
	for _, m := range msgs {
		if g := toolText.FindStringSubmatch(m.Text); g != nil {
			toolMsgs[atoi(g[1])]++
		} else if g := ruleTitle.FindStringSubmatch(m.Text); g != nil {
			ruleMsgs[int64(atoi(g[1]))]++
		}
	}
	for i := range r.tasks {
		if toolMsgs[i] != 1 {
			fail("one Slack message per notify call", "chaos task %d's notify posted %d messages", i, toolMsgs[i])
		}
	}
	rows, err = r.w.db.Query(ctx, `SELECT id FROM tasks`)
	must(t, err)
	var ids []int64
	for rows.Next() {
		var id int64
		must(t, rows.Scan(&id))
		ids = append(ids, id)
	}
	rows.Close()
	for _, id := range ids {
		if ruleMsgs[id] != 1 {
			fail("one Slack message per (task, rule)", "task %d has %d messages of rule ops", id, ruleMsgs[id])
		}
	}
	var failedEvents int
	must(t, r.w.db.QueryRow(ctx, `SELECT count(*) FROM outbox WHERE state = 'failed'`).Scan(&failedEvents))
	if failedEvents > 0 {
		fail("every notification delivered", "%d outbox events failed", failedEvents)
	}

	r.checkLeases(fail)

	// Secrets stay out of the daemons' logs.
	for _, d := range r.daemons {
		b, err := os.ReadFile(d.log)
		must(t, err)
		for _, s := range []string{slackToken, modelKey} {
			if strings.Contains(string(b), s) {
				fail("secrets never logged", "%s's log shows a secret", d.name)
			}
		}
	}

	var leaseLosses, unknown, attempts int
	must(t, r.w.db.QueryRow(ctx, `SELECT
		(SELECT count(*) FROM attempt_records WHERE outcome = 'lease_expired'),
		(SELECT count(*) FROM ledger WHERE state = 'unknown'),
		(SELECT count(*) FROM attempt_records)`).Scan(&leaseLosses, &unknown, &attempts))
	starts := 0
	for _, d := range r.daemons {
		starts += d.starts
	}
	r.note("done")
	t.Logf("chaos: %d tasks + %d agent tasks + %d children in %s; daemon starts %d; attempts %d; lease losses %d; "+
		"unknown outcomes %d; downstream hits %d for %d business effects (%d keyed re-sends absorbed); "+
		"slack messages %d (%d posts, %d history reads)",
		r.tasks, r.agents, r.tasks, time.Since(r.start).Round(time.Second), starts, attempts, leaseLosses, unknown,
		r.down.Hits(), r.down.Effects(), r.down.Hits()-r.down.Effects(),
		len(msgs), r.slack.Calls("chat.postMessage"), r.slack.Calls("conversations.history"))
	r.mu.Lock()
	t.Logf("what the harness did:\n%s", strings.Join(r.events, "\n"))
	r.mu.Unlock()
}

// checkLeases: no task ever had two overlapping leases.
func (r *run) checkLeases(fail func(string, string, ...any)) {
	rows, err := r.w.db.Query(context.Background(), `SELECT a.task_id, a.lease_token, b.lease_token FROM attempt_records a
		JOIN attempt_records b ON a.task_id = b.task_id AND a.lease_token < b.lease_token
		WHERE b.started_at < coalesce(a.ended_at, 'infinity'::timestamptz)`)
	must(r.t, err)
	defer rows.Close()
	for rows.Next() {
		var id, a, b int64
		must(r.t, rows.Scan(&id, &a, &b))
		fail("no overlapping leases", "task %d: the lease of token %d began before token %d's ended", id, b, a)
	}
	must(r.t, rows.Err())
}

func atoi(s string) int {
	n := 0
	for _, c := range s {
		n = n*10 + int(c-'0')
	}
	return n
}

// checkCharges: an agent task that succeeded made its charge exactly once,
// under the key its ledger row records; one that was parked has its charge
// of unknown outcome in the ledger, sent at most once.
func (r *run) checkCharges(charges map[string]int, parked map[int64]bool, fail func(string, string, ...any)) {
	ctx := context.Background()
	rows, err := r.w.db.Query(ctx, `
SELECT t.id, t.state, l.effect_key, l.state
FROM tasks t LEFT JOIN ledger l ON l.task_id = t.id AND l.operation = 'mcp.shop.charge'
WHERE t.kind = 'agent' ORDER BY t.id`)
	must(r.t, err)
	defer rows.Close()
	for rows.Next() {
		var id int64
		var state string
		var key, effect *string
		must(r.t, rows.Scan(&id, &state, &key, &effect))
		switch {
		case key == nil:
			fail("every task finished", "agent task %d (%s) has no charge in the ledger", id, state)
		case parked[id] && *effect != "unknown":
			fail("only an unknown outcome parks", "agent task %d is parked but its charge is %s", id, *effect)
		case !parked[id] && charges[*key] != 1:
			fail("one business effect per intended effect", "agent task %d succeeded with its charge sent %d times", id, charges[*key])
		}
	}
	must(r.t, rows.Err())
}
