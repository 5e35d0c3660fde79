package agentledger

import (
	"encoding/json"
	"strings"
	"time"
)

// TaskState is where a task stands in its life.
type TaskState string

// The task states. A task moves queued → running → one of the terminal states,
// possibly through retrying (failed, waiting for run_at) any number of times,
// and through waiting (parked for something outside the queue — a person's
// approval — until it is woken or its run_at comes; no claim reads it).
// A task whose completed effects declared compensations moves, instead of
// ending dead or cancelled (or when an operator asks), to compensating:
// claimable like retrying, each run undoes its completed effects in reverse
// order, and it ends compensated (or needs_attention when one cannot be
// undone).
const (
	StateQueued         TaskState = "queued"
	StateWaiting        TaskState = "waiting"
	StateRunning        TaskState = "running"
	StateRetrying       TaskState = "retrying"
	StateSucceeded      TaskState = "succeeded"
	StateDead           TaskState = "dead"
	StateCancelled      TaskState = "cancelled"
	StateNeedsAttention TaskState = "needs_attention"
	StateCompensating   TaskState = "compensating"
	StateCompensated    TaskState = "compensated"
)

// TaskStates lists every state in display order.
var TaskStates = []TaskState{
	StateQueued, StateWaiting, StateRunning, StateRetrying, StateSucceeded,
	StateDead, StateCancelled, StateNeedsAttention, StateCompensating, StateCompensated,
}

// Valid reports whether s is one of the known states.
func (s TaskState) Valid() bool {
	for _, v := range TaskStates {
		if s == v {
			return true
		}
	}
	return false
}

// OneOf names states as a sentence lists them: "succeeded, dead or
// cancelled".
func OneOf[S ~string](ss []S) string {
	switch len(ss) {
	case 0:
		return ""
	case 1:
		return string(ss[0])
	}
	names := make([]string, len(ss)-1)
	for i, s := range ss[:len(ss)-1] {
		names[i] = string(s)
	}
	return strings.Join(names, ", ") + " or " + string(ss[len(ss)-1])
}

// Finished reports whether no worker will run the task again without an
// operator's action.
func (s TaskState) Finished() bool {
	switch s {
	case StateSucceeded, StateDead, StateCancelled, StateCompensated:
		return true
	}
	return false
}

// OperatorTenant is the tenant of the tasks the operator submits (agentctl,
// cron, webhooks) and of a task submitted without one: reserved, so that no
// API tenant can read or change them, and granted everything by default.
const OperatorTenant = "default"

// Task is one unit of work as stored.
type Task struct {
	ID          int64           `json:"id"`
	Tenant      string          `json:"tenant"`
	Queue       string          `json:"queue"`
	Kind        string          `json:"kind"`
	Payload     json.RawMessage `json:"payload"`
	Priority    int16           `json:"priority"`
	RunAt       time.Time       `json:"run_at"`
	State       TaskState       `json:"state"`
	Attempt     int32           `json:"attempt"`
	MaxAttempts int32           `json:"max_attempts"`
	Generation  int32           `json:"generation"`

	LeaseOwner      string     `json:"lease_owner,omitempty"`
	LeaseToken      int64      `json:"lease_token"`
	LeaseExpiresAt  *time.Time `json:"lease_expires_at,omitempty"`
	CancelRequested *time.Time `json:"cancel_requested_at,omitempty"`

	Result        json.RawMessage `json:"result,omitempty"`
	LastError     string          `json:"last_error,omitempty"`
	SubmissionKey string          `json:"submission_key,omitempty"`
	// WaitReason says what a queued task waits for (a limit), set when its
	// last attempt was deferred and cleared when it is claimed again.
	WaitReason string `json:"wait_reason,omitempty"`
	// Compensation says why the task is in its compensation phase (it
	// failed for good, was cancelled, or someone asked: "operator", for an
	// operator's request and its tenant's through the API alike, who
	// asked being recorded beside it, as operator.Detail reads it); empty
	// on its forward path. A run of a task with it set undoes, not does.
	Compensation string `json:"compensation,omitempty"`
	// TraceParent is the W3C traceparent of the task's submission, empty
	// when tracing was off; ReplayTraceParent that of the operator's last
	// replay or re-run. A worker's attempt joins the latter's trace if set,
	// linked to the former, else the former's.
	TraceParent       string `json:"traceparent,omitempty"`
	ReplayTraceParent string `json:"replay_traceparent,omitempty"`

	CreatedAt  time.Time  `json:"created_at"`
	UpdatedAt  time.Time  `json:"updated_at"`
	FinishedAt *time.Time `json:"finished_at,omitempty"`

	// GenerationClaims is how many times the task was claimed in its
	// current generation, counting the claim that returned it: 1 on the
	// generation's first claim, when no effect of the generation can be
	// in the ledger yet (FirstClaim). A replay or a retry keeps counting;
	// a re-run starts a generation at 0.
	GenerationClaims int32 `json:"-"`

	// Needs are what the task needs of the worker pool that runs it beyond
	// its kind ("tool:open_ticket", "model", …; see registry.Caps), known
	// at submit; a pool claims it only if it has them all.
	Needs []string `json:"needs,omitempty"`
}

// FirstClaim reports whether t was returned by its generation's first
// claim: no earlier attempt of the generation ran, so the ledger holds no
// effect of it.
func (t *Task) FirstClaim() bool { return t.GenerationClaims == 1 }

// Lease identifies one attempt's right to work a task. Every write the attempt
// makes carries it, and the database accepts the write only while Token is the
// task's current fencing token (invariant I2).
type Lease struct {
	TaskID int64 `json:"task_id"`
	Token  int64 `json:"token"`
}

// AttemptOutcome says how an attempt ended.
type AttemptOutcome string

// The attempt outcomes.
const (
	OutcomeSucceeded    AttemptOutcome = "succeeded"
	OutcomeRetry        AttemptOutcome = "retry"
	OutcomeDead         AttemptOutcome = "dead"
	OutcomeCancelled    AttemptOutcome = "cancelled"
	OutcomeReleased     AttemptOutcome = "released"
	OutcomeLeaseExpired AttemptOutcome = "lease_expired"
	// OutcomeDeferred: the attempt waited for a limit, did nothing outside
	// and does not count against max_attempts.
	OutcomeDeferred AttemptOutcome = "deferred"
)

// Attempt is one claim of a task by one worker, kept for operators.
type Attempt struct {
	TaskID     int64          `json:"task_id"`
	Attempt    int32          `json:"attempt"`
	Generation int32          `json:"generation"`
	Token      int64          `json:"token"`
	Worker     string         `json:"worker"`
	StartedAt  time.Time      `json:"started_at"`
	EndedAt    *time.Time     `json:"ended_at,omitempty"`
	Outcome    AttemptOutcome `json:"outcome,omitempty"`
	Error      string         `json:"error,omitempty"`
}

// ValidName reports whether s can name a tenant, a queue or a kind: 1-128
// characters of letters, digits, '.', '_', ':' or '-'.
func ValidName(s string) bool {
	if len(s) < 1 || len(s) > 128 {
		return false
	}
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9',
			r == '.', r == '_', r == '-', r == ':':
		default:
			return false
		}
	}
	return true
}

// CompensationCause is the error that sent generation's compensation phase
// going, as the attempts of a task (Store.Attempts) record it: the last
// attempt of that generation that closed with outcome compensating (the
// forward path's failure, a denial, a cancel). A finished compensation
// clears the task's last error, so this is where the cause stays; "" when
// none closed so.
func CompensationCause(generation int32, atts []Attempt) string {
	cause := ""
	for _, a := range atts {
		if a.Generation == generation && a.Outcome == AttemptOutcome(StateCompensating) && a.Error != "" {
			cause = a.Error
		}
	}
	return cause
}
