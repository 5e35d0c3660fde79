package client

import (
	"context"
	"encoding/json"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/waits"
)

// Signal is a signal to send: it wakes the oldest of the tenant's tasks
// waiting for its name and correlation key (the wait_for_signal tool), or
// is kept for one until its retention ends.
type Signal struct {
	// Name is what the tasks wait for ("payment.settled"); Key picks the
	// waiter ("order-1004").
	Name, Key string
	// Payload is the waiting step's result; empty is {}.
	Payload json.RawMessage
	// IdempotencyKey makes sending again the same signal: the same key and
	// signal return the one sent the first time (Sent.Duplicate); the key
	// with another signal is refused (agentledger.ErrKeyReuse, over HTTP
	// idempotency_key_reused). Over HTTP an empty key is replaced by a
	// random one per Send call, so the client's own retries are safe;
	// over the database an empty key is derived from the name, key and
	// payload, so the same signal sent twice is one.
	IdempotencyKey string
	// Retention is how long a signal no task waits for yet is kept; zero
	// is the server's default (7 days).
	Retention time.Duration
}

// Sent is a signal as sent: consumed (Signal.TaskID the task it woke) or
// pending, and whether it had been sent before under its key.
type Sent struct {
	Signal    waits.Signal
	Duplicate bool
}

// WaitQuery filters Waits; the zero query lists the waiting ones.
type WaitQuery struct {
	TaskID int64
	Kind   string // signal, timer or children; "" every kind
	// States; empty lists the waiting ones.
	States []string
	Limit  int // default 50 over HTTP, 100 over the database
}

// Client submits, reads, cancels and replays its tenant's tasks, sends
// signals and lists waits: Database, HTTP, and an embedded daemon's
// (daemon.Daemon.Client).
type Client interface {
	Submitter
	// Task reads one of the client's tenant's tasks by id, as it stands
	// now; agentledger.ErrNotFound for none (or another tenant's). Over
	// HTTP it has what GET /v1/tasks/{id} answers: no lease (owner,
	// token, expiry) and no trace context. Wait polls it until the task
	// ends.
	Task(ctx context.Context, id int64) (*agentledger.Task, error)
	// Cancel cancels one of the client's tenant's tasks, and its
	// unfinished children: a queued, waiting or retrying task at once; a
	// running one is asked to stop before its next call, and is returned
	// still running (Wait sees it end). A cancelled task is returned as it
	// is; one that finished otherwise is agentledger.ErrConflict.
	Cancel(ctx context.Context, id int64) (*agentledger.Task, error)
	// Replay queues a dead, cancelled, succeeded or parked
	// (needs_attention) task of the client's tenant to run again in its
	// generation, due now whatever its run_at was: the effects the ledger
	// completed are served from it, the rest performed. Refused
	// (agentledger.ErrConflict) while it is queued or running, when an
	// effect of unknown outcome would stop it again, and for a steps task
	// whose gated call was not approved in its generation. Over HTTP a
	// kind the tenant's grant no longer allows is refused too
	// (agentledger.ErrForbidden); the database's client acts as the
	// operator. A new intent is a new task: Submit it.
	Replay(ctx context.Context, id int64) (*agentledger.Task, error)
	// Send sends a signal for the client's tenant.
	Send(ctx context.Context, s Signal) (Sent, error)
	// Waits lists the waits of the client's tenant's tasks: what each
	// waits for, its key and its deadline; the waiting ones by default,
	// soonest deadline first.
	Waits(ctx context.Context, q WaitQuery) ([]waits.Wait, error)
}
