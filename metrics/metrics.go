package metrics

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/worker"
)

const ns = "agentledger"

// Metrics are one daemon's collectors, on their own registry.
type Metrics struct {
	Registry *prometheus.Registry

	claims        *prometheus.CounterVec
	started       *prometheus.CounterVec
	leaseLosses   prometheus.Counter
	deferrals     *prometheus.CounterVec
	attempts      *prometheus.CounterVec
	attemptTime   *prometheus.HistogramVec
	effects       *prometheus.CounterVec
	notifications *prometheus.CounterVec
	cronFires     *prometheus.CounterVec
	webhooks      *prometheus.CounterVec
	httpRequests  *prometheus.CounterVec
	httpTime      *prometheus.HistogramVec
	janitor       *prometheus.CounterVec
	breakerOpens  *prometheus.CounterVec
	breakerProbes *prometheus.CounterVec
	approvalWait  *prometheus.HistogramVec
	clicks        *prometheus.CounterVec
}

// New returns the metrics, registered with the Go and process collectors.
func New() *Metrics {
	m := &Metrics{
		Registry: prometheus.NewRegistry(),
		claims: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "tasks_claimed_total",
			Help: "Tasks claimed by this daemon, by queue (with those it started at their enqueue)."}, []string{"queue"}),
		started: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "tasks_started_at_enqueue_total",
			Help: "Of the tasks claimed, those this daemon's idle pool took at their enqueue, without a claim, by queue."}, []string{"queue"}),
		leaseLosses: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "lease_losses_total",
			Help: "Attempts abandoned or fenced out because their lease was lost."}),
		deferrals: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "deferrals_total",
			Help: "Attempts deferred to wait for a fleet-wide limit (not counted as attempts), by the kind of target waited for."},
			[]string{"target_kind"}),
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "attempts_total",
			Help: "Attempts ended by this daemon, by kind and the task state they left."}, []string{"kind", "state"}),
		attemptTime: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Name: "attempt_duration_seconds",
			Help: "How long attempts ran, by kind.", Buckets: prometheus.ExponentialBuckets(0.001, 4, 10)}, []string{"kind"}),
		effects: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "effects_total",
			Help: "Effects through the ledger by operation, class and outcome: performed, served (from the ledger, " +
				"not performed again), failed, unknown, deferred (waits for a limit), lease_lost, error."}, []string{"operation", "class", "outcome"}),
		notifications: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "notifications_total",
			Help: "Outbox events this daemon settled, by outcome: delivered, retry, rate_limited, failed, lost."}, []string{"outcome"}),
		cronFires: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "cron_fires_total",
			Help: "Cron slots fired by this daemon, by schedule and whether it was a catch-up."}, []string{"schedule", "catch_up"}),
		webhooks: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "webhook_deliveries_total",
			Help: "Webhook deliveries by source and outcome: accepted, duplicate, rejected."}, []string{"source", "outcome"}),
		httpRequests: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "http_requests_total",
			Help: "API requests by route and status."}, []string{"route", "status"}),
		httpTime: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Name: "http_request_duration_seconds",
			Help: "API request latency by route.", Buckets: prometheus.DefBuckets}, []string{"route"}),
		janitor: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "janitor_deleted_total",
			Help: "Rows the retention janitor deleted, by sweep."}, []string{"sweep"}),
		breakerOpens: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "breaker_opens_total",
			Help: "Circuit breakers this daemon opened (its failure tripped it, or its probe failed), by target; an open breaker holds every daemon's calls."},
			[]string{"target"}),
		breakerProbes: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "breaker_probes_total",
			Help: "Half-open probes this daemon made, by target and result: started, succeeded, failed."},
			[]string{"target", "result"}),
		approvalWait: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Name: "approval_wait_seconds",
			Help: "Time from an approval request to its decision, by how it was decided (slack, console, agentctl, api, timeout) " +
				"and the outcome (approved, denied, expired), observed when the gated effect goes on or stops.",
			Buckets: prometheus.ExponentialBuckets(1, 4, 10)}, []string{"via", "outcome"}),
		clicks: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "approval_clicks_total",
			Help: "Slack Approve and Deny clicks this daemon answered, by outcome: decided (the click decided), " +
				"already (decided before: it changed nothing), refused (not an approver), unknown."}, []string{"outcome"}),
	}
	m.Registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.claims, m.started, m.leaseLosses, m.deferrals, m.attempts, m.attemptTime, m.effects, m.notifications, m.cronFires, m.webhooks,
		m.httpRequests, m.httpTime, m.janitor, m.breakerOpens, m.breakerProbes, m.approvalWait, m.clicks)
	return m
}

// Worker is the worker pool's observer.
func (m *Metrics) Worker() worker.Observer { return workerObserver{m} }

type workerObserver struct{ m *Metrics }

var _ worker.StartObserver = workerObserver{}

func (o workerObserver) Claimed(queue string, n int) {
	o.m.claims.WithLabelValues(queue).Add(float64(n))
}
func (o workerObserver) StartedAtEnqueue(queue string) {
	o.m.started.WithLabelValues(queue).Inc()
}
func (o workerObserver) LeaseLost() { o.m.leaseLosses.Inc() }
func (o workerObserver) Deferred(_, targetKind string) {
	o.m.deferrals.WithLabelValues(targetKind).Inc()
}
func (o workerObserver) Finished(kind string, state agentledger.TaskState, d time.Duration) {
	o.m.attempts.WithLabelValues(kind, string(state)).Inc()
	if d > 0 {
		o.m.attemptTime.WithLabelValues(kind).Observe(d.Seconds())
	}
}

// Effect is the ledger's observer (ledger.Ledger.Observe).
func (m *Metrics) Effect(operation string, class ledger.Class, outcome string) {
	m.effects.WithLabelValues(operation, string(class), outcome).Inc()
}

// Notification counts a settled outbox event.
func (m *Metrics) Notification(outcome string) { m.notifications.WithLabelValues(outcome).Inc() }

// CronFire counts a fired slot.
func (m *Metrics) CronFire(schedule string, _ time.Time, catchUp bool) {
	m.cronFires.WithLabelValues(schedule, strconv.FormatBool(catchUp)).Inc()
}

// Webhook counts a delivery.
func (m *Metrics) Webhook(source, outcome string) { m.webhooks.WithLabelValues(source, outcome).Inc() }

// HTTP counts an API request.
func (m *Metrics) HTTP(route string, status int, d time.Duration) {
	m.httpRequests.WithLabelValues(route, strconv.Itoa(status)).Inc()
	m.httpTime.WithLabelValues(route).Observe(d.Seconds())
}

// ApprovalDecided observes the wait of a decided approval request.
func (m *Metrics) ApprovalDecided(via, outcome string, waited time.Duration) {
	m.approvalWait.WithLabelValues(via, outcome).Observe(waited.Seconds())
}

// ApprovalClick counts a Slack click on an approval request by outcome.
func (m *Metrics) ApprovalClick(outcome string) { m.clicks.WithLabelValues(outcome).Inc() }

// ApprovalClicks is the counter of outcome's clicks (for tests).
func (m *Metrics) ApprovalClicks(outcome string) prometheus.Counter {
	return m.clicks.WithLabelValues(outcome)
}

// BreakerOpened counts a breaker this daemon opened.
func (m *Metrics) BreakerOpened(target string) { m.breakerOpens.WithLabelValues(target).Inc() }

// BreakerProbed counts a probe's start or end.
func (m *Metrics) BreakerProbed(target, result string) {
	m.breakerProbes.WithLabelValues(target, result).Inc()
}

// Janitor counts deleted rows.
func (m *Metrics) Janitor(sweep string, n int64) { m.janitor.WithLabelValues(sweep).Add(float64(n)) }
