package chaos

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentledger/agentledger/agentledgertest/downstream"
	"github.com/agentledger/agentledger/agentledgertest/fakeopenai"
	"github.com/agentledger/agentledger/agentledgertest/slackfake"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/internal/test/otlpsink"
	"github.com/agentledger/agentledger/notify/outbox"
)

const (
	slackToken = "xoxb-chaos-0000-s3cr3t"
	modelKey   = "sk-chaos-s3cr3t"
	lease      = 3 * time.Second
)

// run is one drill: its world, servers, daemons and what it did.
type run struct {
	t       *testing.T
	w       *world
	rng     *rand.Rand
	down    *downstream.Server
	slack   *slackfake.Server
	channel string
	daemons []*daemon

	tasks, agents int
	kills         int      // SIGKILLs sent by the schedule
	mcpLog        string   // the MCP servers' calls: "<tool> <ledger key>" a line
	env           []string // more environment for the fleet

	// lossy: the round may lose acknowledged commits (asynchronous
	// replication); check counts each invariant's violations in
	// violations instead of failing.
	lossy      bool
	violations map[string]int

	mu     sync.Mutex
	events []string // what the harness did, for the report
	start  time.Time
	acked  map[string]ack // each submission's acknowledgement, by key
}

// ack is when the harness's submission of a key was acknowledged, and the
// task it named: what a failover that lost it is read against.
type ack struct {
	at  time.Duration
	id  int64
	dup bool // the key was there already (an earlier try had committed)
}

func (r *run) note(format string, a ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, sprintf("%6.1fs ", time.Since(r.start).Seconds())+sprintf(format, a...))
}

// options size a drill.
type options struct {
	tasks, agents, seconds int
	// pgbouncer, when set, is the PgBouncer binary the daemons connect
	// through, in transaction pooling mode.
	pgbouncer string
	// prepared: PgBouncer keeps prepared statements and the daemons run
	// with --pgbouncer-prepared.
	prepared bool
	// traced runs the fleet with tracing on, exporting to a local
	// receiver, and checks the spans that reached it.
	traced bool
}

func TestChaos(t *testing.T) {
	drill(t, options{tasks: envInt(t, "CHAOS_TASKS", 150), agents: envInt(t, "CHAOS_AGENTS", 10),
		seconds: envInt(t, "CHAOS_SECONDS", 15), traced: true})
}

// skipShort skips t under -short.
func skipShort(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("the chaos drill starts its own PostgreSQL and three daemons")
	}
}

// newRun starts a drill's world and its counting downstream, which
// answers with a real API's latency, and seeds the fault schedule.
func newRun(t *testing.T) *run {
	skipShort(t)
	return newRunIn(t, newWorld(t))
}

// newRunIn is newRun in the world w.
func newRunIn(t *testing.T, w *world) *run {
	seed := uint64(envInt(t, "CHAOS_SEED", int(time.Now().UnixNano()%1_000_000)))
	t.Logf("CHAOS_SEED=%d (set it to replay this run's schedule)", seed)
	r := &run{t: t, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), w: w}
	r.down = downstream.New()
	t.Cleanup(r.down.Close)
	var dmu sync.Mutex
	latency := rand.New(rand.NewPCG(seed+1, seed))
	r.down.SetDelay(func() time.Duration { // a real API's latency: work stays in flight under the faults
		dmu.Lock()
		defer dmu.Unlock()
		return time.Duration(200+latency.IntN(1000)) * time.Millisecond
	})
	return r
}

// startFleet starts the three daemons on dbURL, each with the drill's
// lease timings and args and env added.
func (r *run) startFleet(dbURL string, args, env []string) {
	for i := range 3 {
		name := sprintf("d%d", i+1)
		d := &daemon{name: name, bin: r.w.agentd, log: filepath.Join(r.w.dir, name+".log"),
			args: append([]string{"--lease", lease.String(), "--heartbeat", "1s", "--grace", "500ms",
				"--concurrency", "20", "--batch-size", "10", "--poll-interval", "200ms", "--listen", "",
				"--http-allowed-hosts", "http://" + strings.TrimPrefix(r.down.URL, "http://")}, args...),
			env: append([]string{"DATABASE_URL=" + dbURL, "AGENTLEDGER_STATE_DIR=" + filepath.Join(r.w.dir, "state-"+name)}, env...),
		}
		must(r.t, d.start())
		r.daemons = append(r.daemons, d)
	}
}

// drill runs one chaos round and checks the invariants.
func drill(t *testing.T, o options) {
	r := newRun(t)
	r.tasks, r.agents = o.tasks, o.agents
	seconds := o.seconds
	dbURL, extra := r.w.url, []string(nil)
	if o.pgbouncer != "" {
		dbURL, extra = startPgBouncer(t, r.w, o.pgbouncer, o.prepared), []string{"--pgbouncer"}
		if o.prepared {
			extra = []string{"--pgbouncer-prepared"}
		}
	}
	var traces *otlpsink.Sink
	if o.traced {
		traces = otlpsink.New()
		defer traces.Close()
		r.env = append(r.env, "OTEL_EXPORTER_OTLP_ENDPOINT="+traces.URL, "OTEL_SERVICE_NAME=agentd",
			"OTEL_BSP_SCHEDULE_DELAY=200")
	}
	r.startWorkers(dbURL, extra)
	defer func() {
		for _, d := range r.daemons {
			d.stop()
		}
		if t.Failed() {
			r.report()
		}
	}()

	r.start = time.Now()
	chaosDone := make(chan struct{})
	stopChaos := make(chan struct{})
	go func() {
		defer close(chaosDone)
		r.chaos(time.Duration(seconds)*time.Second, stopChaos)
	}()
	r.submit(time.Duration(seconds) * time.Second * 2 / 3)
	<-chaosDone
	close(stopChaos)
	r.note("chaos over; waiting for the work to finish")
	r.supervise(func() bool { done, _ := r.finished(); return done }, 5*time.Minute)
	for _, d := range r.daemons {
		d.stop()
	}
	r.check()
	if traces != nil {
		r.checkTraces(traces)
	}
}

// checkTraces checks that the traced fleet's spans reached the receiver:
// every kind of span the drill's work makes, effects performed and served.
// A SIGKILLed daemon loses the spans it had batched, so counts are not
// compared with the work done.
func (r *run) checkTraces(s *otlpsink.Sink) {
	spans, err := s.Spans()
	must(r.t, err)
	n := otlpsink.Count(spans)
	outcomes := map[string]int{}
	for _, sp := range spans {
		if o := sp.Attrs["agentledger.ledger.outcome"]; o != "" {
			outcomes[o]++
		}
	}
	r.t.Logf("tracing: %d spans %v; effect outcomes %v", len(spans), n, outcomes)
	want := []string{"agentledger.claim", "agentledger.attempt", "agentledger.effect", "agentledger.tool", "agentledger.notify"}
	if r.agents > 0 {
		want = append(want, "chat")
	}
	for _, name := range want {
		if n[name] == 0 {
			r.t.Errorf("tracing: no %s span reached the receiver (got %v)", name, n)
		}
	}
	if outcomes["performed"] == 0 {
		r.t.Errorf("tracing: no effect span says performed (outcomes %v)", outcomes)
	}
}

// startWorkers starts the fake Slack and model, the notification rule and
// the three daemons on dbURL (extra added to their arguments).
func (r *run) startWorkers(dbURL string, extra []string) {
	t := r.t
	r.slack = slackfake.New(t, slackToken)
	r.channel = r.slack.AddChannel("ops")
	model := fakeopenai.NewFunc(t, modelKey, r.modelReply)

	ctx := context.Background()
	_, err := outbox.NewRules(r.w.db).Put(ctx, outbox.Rule{Name: "ops", Channel: "ops", Events: outbox.Events}, false)
	must(t, err)

	// Every daemon starts its own copy of the counting MCP server; they
	// share one call log.
	r.mcpLog = filepath.Join(r.w.dir, "mcp-calls.log")
	config := filepath.Join(r.w.dir, "agentd.toml")
	// The fleet's pace of the Slack channel is lifted (agentd's default is
	// 50 posts a minute): the fault schedule, not Slack's pace, is under
	// test here; every post still books the shared limit.
	must(t, os.WriteFile(config, []byte(sprintf("[[mcp_server]]\nname = \"shop\"\ncommand = [%q, \"-log\", %q]\n\n"+
		"[[limit]]\ntarget = \"slack-channel:*\"\nrate = \"1000000/s\"\nburst = 1000\n",
		r.w.mcpcount, r.mcpLog)), 0o644))
	r.startFleet(dbURL, append([]string{"--dispatch-lease", "5s", "--dispatch-concurrency", "4",
		"--slack-channel-interval", "1ms", "--slack-workspace-rate", "100000",
		"--llm-base-url", model.BaseURL(), "--llm-model", "chaos", "--config", config}, extra...),
		append([]string{"AGENTLEDGER_SLACK_TOKEN=" + slackToken, "AGENTLEDGER_SLACK_API_URL=" + r.slack.APIURL(),
			"AGENTLEDGER_LLM_API_KEY=" + modelKey}, r.env...))
}

// modelReply is the fake model: an agent asks for one keyed POST, then for
// the MCP server's idempotent reserve, then for its destructive charge,
// then answers.
func (r *run) modelReply(req fakeopenai.Request) fakeopenai.Reply {
	var j string
	answered := 0
	for _, m := range req.Messages {
		if m.Role == "tool" {
			answered++
		}
		if m.Role == "user" {
			j = strings.TrimPrefix(m.Content, "chaos agent ")
		}
	}
	switch answered {
	case 0:
		args := sprintf(`{"method":"POST","url":"%s/effects","body":{"agent":%s}}`, r.down.URL, j)
		return fakeopenai.Calls(fakeopenai.ToolCall{ID: "call-" + j, Name: "http_request", Arguments: args})
	case 1:
		return fakeopenai.Calls(fakeopenai.ToolCall{ID: "mcp-" + j, Name: "shop__reserve", Arguments: sprintf(`{"order":%s}`, j)})
	case 2:
		return fakeopenai.Calls(fakeopenai.ToolCall{ID: "charge-" + j, Name: "shop__charge", Arguments: sprintf(`{"order":%s}`, j)})
	}
	return fakeopenai.Text("done")
}

// submit enqueues the parents and agents spread over d, so that work is in
// flight throughout the chaos.
func (r *run) submit(d time.Duration) {
	ctx := context.Background()
	store := claims.New(r.w.db)
	total := r.tasks + r.agents
	for n := range total {
		var p claims.EnqueueParams
		if n < r.tasks {
			steps := sprintf(`{"steps":[
				{"tool":"http_request","args":{"method":"POST","url":"%s/effects","body":{"task":%d}}},
				{"tool":"create_task","args":{"kind":"echo","payload":{"parent":%d}}},
				{"tool":"notify","args":{"channel":"ops","text":"chaos task %d done"}}]}`, r.down.URL, n, n, n)
			p = claims.EnqueueParams{Kind: "steps", Payload: json.RawMessage(steps), SubmissionKey: sprintf("chaos:%d", n)}
		} else {
			j := n - r.tasks
			p = claims.EnqueueParams{Kind: "agent", SubmissionKey: sprintf("chaos-agent:%d", j),
				Payload: json.RawMessage(sprintf(`{"prompt":"chaos agent %d","tools":["http_request","shop/reserve","shop/charge"],"max_steps":5}`, j))}
		}
		p.MaxAttempts = 1000
		for {
			res, err := store.Enqueue(ctx, p)
			if err == nil {
				r.mu.Lock()
				if r.acked == nil {
					r.acked = map[string]ack{}
				}
				r.acked[p.SubmissionKey] = ack{at: time.Since(r.start), id: res.Task.ID, dup: res.Duplicate}
				r.mu.Unlock()
				break
			}
			// PostgreSQL may be restarting: submit again (the key makes
			// it one task).
			time.Sleep(100 * time.Millisecond)
		}
		time.Sleep(d / time.Duration(total))
	}
	r.note("submitted %d tasks and %d agent tasks", r.tasks, r.agents)
}

// chaos runs the seeded schedule of faults for d.
func (r *run) chaos(d time.Duration, stop <-chan struct{}) {
	end := time.Now().Add(d)
	froze, restarted, crashed := false, false, false
	for time.Now().Before(end) {
		r.ensureAll()
		wait := time.Duration(300+r.rng.IntN(900)) * time.Millisecond
		time.Sleep(wait) // the pace of the faults
		elapsed := time.Since(r.start)
		switch {
		case !froze && elapsed > d/4:
			froze = true
			dm := r.daemons[r.rng.IntN(len(r.daemons))]
			r.note("SIGSTOP %s for %s (past its lease), then SIGCONT", dm.name, 2*lease)
			go dm.freeze(2 * lease)
		case !restarted && elapsed > d/2:
			restarted = true
			r.note("restarting PostgreSQL (fast shutdown)")
			if err := r.w.cluster.Restart(context.Background()); err != nil {
				r.note("restart failed: %v", err)
			}
		case !crashed && elapsed > d*3/4:
			// A crash loses what was still in the WAL buffers: an
			// asynchronously committed claim, say, whose worker goes on.
			crashed = true
			r.note("crashing PostgreSQL (immediate shutdown, then crash recovery)")
			if err := r.w.cluster.Crash(context.Background()); err != nil {
				r.note("crash failed: %v", err)
			}
		default:
			switch r.rng.IntN(5) {
			case 0, 1:
				dm := r.daemons[r.rng.IntN(len(r.daemons))]
				dm.mu.Lock()
				held := dm.held
				dm.mu.Unlock()
				if !held {
					r.note("SIGKILL %s", dm.name)
					dm.kill()
					r.kills++
				}
			case 2:
				n := r.dropConnections()
				r.note("terminated %d database connections", n)
			case 3:
				r.down.Inject(downstream.CommitThenDrop)
				r.note("downstream: the next effect commits, then the connection drops")
			case 4:
				if r.slack == nil { // a drill without Slack
					break
				}
				r.slack.DropAfterApply("chat.postMessage")
				r.note("slack: the next post lands, then the connection drops")
			}
		}
	}
	r.ensureAll()
}

// ensureAll restarts daemons that are down and not held.
func (r *run) ensureAll() {
	for _, d := range r.daemons {
		if !d.alive() {
			if err := d.ensure(); err == nil && d.alive() {
				r.note("started %s", d.name)
			}
		}
	}
}

// supervise keeps the daemons up until done holds or limit passes.
func (r *run) supervise(done func() bool, limit time.Duration) {
	deadline := time.Now().Add(limit)
	for !done() {
		if time.Now().After(deadline) {
			_, status := r.finished()
			r.t.Fatalf("the work did not finish within %s after the chaos: %s", limit, status)
		}
		r.ensureAll()
		time.Sleep(200 * time.Millisecond) // polling other processes
	}
}

// dropConnections terminates the daemons' database sessions.
func (r *run) dropConnections() int {
	var n int
	_ = r.w.db.QueryRow(context.Background(), `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE application_name = 'agentledger' AND pid <> pg_backend_pid()`).Scan(&n)
	return n
}

// finished reports whether every expected task ended and every
// notification was delivered, and what is left.
func (r *run) finished() (bool, string) {
	var total, open, pending int
	err := r.w.db.QueryRow(context.Background(), `SELECT
		(SELECT count(*) FROM tasks),
		(SELECT count(*) FROM tasks WHERE state NOT IN ('succeeded', 'dead', 'cancelled', 'needs_attention')),
		(SELECT count(*) FROM outbox WHERE state = 'pending')`).Scan(&total, &open, &pending)
	if err != nil {
		return false, err.Error()
	}
	want := 2*r.tasks + r.agents
	status := sprintf("%d of %d tasks, %d unfinished, %d notifications pending", total, want, open, pending)
	return total >= want && open == 0 && pending == 0, status
}

// report prints the harness's log and the daemons' last lines.
func (r *run) report() {
	r.mu.Lock()
	r.t.Logf("what the harness did:\n%s", strings.Join(r.events, "\n"))
	r.mu.Unlock()
	for _, d := range r.daemons {
		b, _ := os.ReadFile(d.log)
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		r.t.Logf("last lines of %s:\n%s", d.name, strings.Join(lines[max(0, len(lines)-15):], "\n"))
	}
}
