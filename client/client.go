// Package client submits tasks to agentledger from another program, and
// sends the signals its tasks wait for, over the database (the tasks table
// the daemons claim from) or over the HTTP API (as a tenant, with its
// bearer token). A submission key makes a submission safe to retry: the
// same key and request make one task; the same key with another request is
// refused (agentledger.ErrKeyReuse). A signal's idempotency key does the
// same for a signal.
//
//	c := client.HTTP("http://127.0.0.1:7450", token, nil)
//	t, err := client.Submit(ctx, c, "refund", Refund{Order: 7, Amount: 10}, client.Options{Key: "refund-7"})
//	sent, err := c.Send(ctx, client.Signal{Name: "payment.settled", Key: "order-7", IdempotencyKey: "evt-91"})
package client

import (
	"context"
	"encoding/json"
	"time"

	"github.com/agentledger/agentledger"
)

// Request is one task to submit.
type Request struct {
	Kind    string
	Payload json.RawMessage
	Options
}

// Options are a submission's optional parts; zero values take the
// defaults (queue "default", priority 0, run now, the server's attempts).
type Options struct {
	// Key is the submission key (the HTTP API's Idempotency-Key): submitting
	// the same request again under it returns the task made the first time.
	// Over HTTP an empty Key is replaced by a random one per Submit call, so
	// the client's own retries are safe.
	Key         string
	Queue       string
	Priority    int
	RunAt       time.Time
	MaxAttempts int32
	// AllowUnserved queues over HTTP a task that no live worker serves
	// (the API refuses it otherwise: 422 naming the kind or queue), for a
	// worker that is not up yet. Database does not check what is served.
	AllowUnserved bool
}

// Submitter submits tasks: Database and HTTP.
type Submitter interface {
	Submit(ctx context.Context, r Request) (*agentledger.Task, error)
}

// Submit submits a task of kind whose payload is args, encoded as JSON:
// the typed side of daemon.Kind.
func Submit[Args any](ctx context.Context, s Submitter, kind string, args Args, o Options) (*agentledger.Task, error) {
	payload, err := json.Marshal(args)
	if err != nil {
		return nil, agentledger.Invalid("payload", "does not encode as JSON: %v", err)
	}
	return s.Submit(ctx, Request{Kind: kind, Payload: payload, Options: o})
}
