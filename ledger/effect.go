package ledger

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/agentledger/agentledger"
)

// Class says what an effect's outcome means when it is unknown
// (docs/design.md, "Ledger protocol").
type Class string

// The effect classes.
const (
	// Pure effects (an LLM completion, a GET) are performed again; the first
	// result recorded stands.
	Pure Class = "pure"
	// Keyed effects (an API honouring Idempotency-Key) are performed again
	// with the same downstream key, and the downstream deduplicates.
	Keyed Class = "keyed"
	// Reconcilable effects (a Slack post carrying its key) are looked up
	// first and performed only if absent.
	Reconcilable Class = "reconcilable"
	// Unsafe effects (no key, no look-up) are never performed blindly: the
	// effect becomes unknown and the task needs an operator.
	Unsafe Class = "unsafe"
	// Local effects (rows in this database) commit with their ledger row.
	Local Class = "local"
)

// Valid reports whether c is a known class.
func (c Class) Valid() bool {
	switch c {
	case Pure, Keyed, Reconcilable, Unsafe, Local:
		return true
	}
	return false
}

// State is where a ledger row stands.
type State string

// The ledger states.
const (
	StatePending   State = "pending"
	StateCompleted State = "completed"
	StateFailed    State = "failed"
	StateUnknown   State = "unknown"
)

// Attempt is who performs an effect: a task generation, through a fence —
// the lease of one attempt of the task, or a dispatcher's claim of an
// outbox event that performs the effect on the task's behalf. Every ledger
// write is fenced on it (invariant I2).
type Attempt struct {
	Tenant     string
	TaskID     int64
	Generation int32
	Fence      Fence
	// First says the attempt is its generation's first claim
	// (agentledger.Task.FirstClaim): no row of the generation can be in
	// the ledger but those it writes itself. A keyed effect is then
	// performed without the fenced look-up before it, while the lease
	// deadline its worker keeps in the context holds
	// (agentledger.LeaseDeadline); should the attempt call one step path
	// twice, the second looks up (LeaseDeadline.Unlooked), served the first
	// record or refused with ErrKeyReuse before anything is sent.
	First bool
}

// Fence is the row an attempt's writes are fenced on, built by the package
// that owns the row's table: a task's lease (claims.LeaseFence), a
// dispatcher's claim of an outbox event (outbox.Claimed.Fence). The ledger
// composes its SQL into the statements that must see the fence hold, so it
// knows no table but its own.
type Fence interface {
	// FenceFrom is a FROM item and condition, "table WHERE …", selecting
	// the fencing row while the fence holds, with id and token standing
	// for the placeholders of FenceID and FenceToken. It depends only on
	// the kind of fence, never on the values.
	FenceFrom(id, token string) string
	// FenceID is the fencing row's id.
	FenceID() int64
	// FenceToken is the fencing token the row must still carry.
	FenceToken() int64
}

// token is the attempt's fencing token, stamped on the rows it reserves.
func (a Attempt) token() int64 { return a.Fence.FenceToken() }

// fenceID is the id of the row the attempt's writes are fenced on.
func (a Attempt) fenceID() int64 { return a.Fence.FenceID() }

// Result is what an effect produced, as stored and served again.
type Result struct {
	// Status is a protocol status where there is one (HTTP).
	Status int `json:"status,omitempty"`
	// Body is the effect's output.
	Body json.RawMessage `json:"body,omitempty"`
	// ExternalRef names what the effect made elsewhere (a message ts, a
	// resource id), for operators and reconciliation.
	ExternalRef string `json:"external_ref,omitempty"`
	// Replayed is set when the result came from the ledger and nothing
	// was performed.
	Replayed bool `json:"-"`
	// Resolved marks an outcome an operator recorded (Resolve, done) for
	// an effect whose outcome was unknown: the operator's word that it
	// happened, with the result they gave if any, not an answer of the
	// downstream. It is stored with the result; a performer cannot set it.
	Resolved bool `json:"resolved,omitempty"`
}

// Call is what a performer gets: the effect's keys.
type Call struct {
	// Key is the effect's ledger key.
	Key string
	// Attempt performing it.
	Attempt Attempt
	// ReservedAt is when the effect was first reserved; set for
	// Reconcile, which need look no further back.
	ReservedAt time.Time
	// scope is the database's identity when its task's keys carry it.
	scope string
}

// DownstreamKey is the Idempotency-Key to send to target: scoped by the
// database (ScopedDownstreamKey) for the tasks whose keys are, the same
// at every attempt of the task.
func (c Call) DownstreamKey(target string) string {
	if c.scope != "" {
		return ScopedDownstreamKey(c.scope, c.Key, target)
	}
	return DownstreamKey(c.Key, target)
}

// Effect is one intended effect.
type Effect struct {
	// Operation names what the effect does, e.g. "http_request",
	// "llm.chat", "task.create". Keys are unique per (tenant, operation).
	Operation string
	// StepPath is the effect's place in the task's journal: "llm/3",
	// "tool/3/<tool_call_id>", "notify/<rule>". Deterministic, never a time
	// or an attempt number.
	StepPath string
	Class    Class
	// Request is the effect's request as JSON; its canonical hash must be
	// the same whenever the same key is presented.
	Request json.RawMessage
	// Compensate, when set, is the call that undoes the effect (JSON
	// {"tool", "args"}, see package saga), kept on its ledger row: the
	// task runs it if it ends dead or cancelled after the effect
	// completed. Such an effect is always reserved before it is performed
	// (a keyed one too), so that a crash between performing and recording
	// leaves a row of unknown outcome for the compensation to find, not
	// nothing.
	Compensate json.RawMessage

	// Perform does the effect (every class but Local). It must send
	// call.DownstreamKey(target) to keyed targets. A nil error records the
	// result; agentledger.Permanent(err) records a failure that later calls
	// return again; any other error is transient and leaves the effect to
	// be retried.
	Perform func(ctx context.Context, call Call) (Result, error)
	// Target names what the effect reaches for the fleet's limits and
	// circuit breakers (package flow: "http:<origin>", "mcp:<server>"),
	// empty for none. The effect path's flow stage (tools.Path) sets Admit
	// and wraps Perform from it, so that every tool that names its target
	// is admitted the same way. Hold is the longest a call may take: a
	// concurrency slot is held that long at most.
	Target string
	Hold   time.Duration
	// Admit, when set, is asked before the effect is performed (every
	// class but Local) whether it may go now — a fleet-wide limit books
	// its call here, a concurrency cap holds a slot, a circuit breaker
	// stops it. It is called only when the ledger holds no finished
	// outcome for the key, so a replay served from the ledger is never
	// admitted, and before anything is reserved or recorded: its error
	// (an agentledger.DeferredError to wait for capacity) is returned
	// as is and leaves the ledger as if the effect was never tried. The
	// release it returns, when not nil, is called once when Do is done
	// with the effect, performed or not, to give back what admission holds.
	Admit func(ctx context.Context) (release func(), err error)
	// PerformLocal does a Local effect inside the ledger row's transaction.
	PerformLocal func(ctx context.Context, call Call, db DB) (Result, error)
	// Reconcile looks a Reconcilable effect up downstream: found reports
	// whether an earlier performance landed.
	Reconcile func(ctx context.Context, call Call) (r Result, found bool, err error)
}

func (e *Effect) validate() error {
	switch {
	case e.Operation == "" || len(e.Operation) > 200:
		return agentledger.Invalid("operation", "must be 1-200 characters")
	case e.StepPath == "" || len(e.StepPath) > 500:
		return agentledger.Invalid("step_path", "must be 1-500 characters")
	case !e.Class.Valid():
		return agentledger.Invalid("class", "unknown class %q", e.Class)
	case e.Class == Local && e.PerformLocal == nil:
		return agentledger.Invalid("perform", "a local effect needs PerformLocal")
	case e.Class != Local && e.Perform == nil:
		return agentledger.Invalid("perform", "a %s effect needs Perform", e.Class)
	case e.Class == Local && e.Admit != nil:
		return agentledger.Invalid("admit", "a local effect is not admitted: it commits with its row")
	case e.Class == Reconcilable && e.Reconcile == nil:
		return agentledger.Invalid("reconcile", "a reconcilable effect needs Reconcile")
	}
	return nil
}

// NotPerformedError is a performer's refusal before it did anything (a
// host the configuration does not allow): nothing is recorded, so the
// effect runs once the cause is fixed — a retry of the task performs it —
// while the task fails permanently meanwhile.
type NotPerformedError struct{ Err error }

func (e *NotPerformedError) Error() string { return e.Err.Error() }
func (e *NotPerformedError) Unwrap() error { return e.Err }

// NotPerformed marks err as a refusal before performing (permanent for the
// task, not recorded in the ledger).
func NotPerformed(err error) error { return agentledger.Permanent(&NotPerformedError{Err: err}) }

// ErrNeedsAttention: the effect's outcome is unknown and its class forbids
// performing it blindly; an operator must resolve it (Resolve). The worker
// parks the task when a handler returns it.
var ErrNeedsAttention = agentledger.ErrNeedsAttention

// FailedError is a permanent failure stored in the ledger; every later call
// with the same key returns it again. It matches agentledger.PermanentError
// through Permanent wrapping by Do.
type FailedError struct {
	Key     string
	Message string
	Result  Result
}

func (e *FailedError) Error() string {
	return fmt.Sprintf("effect %s failed permanently: %s", short(e.Key), e.Message)
}

func short(key string) string {
	if len(key) > 12 {
		return key[:12]
	}
	return key
}
