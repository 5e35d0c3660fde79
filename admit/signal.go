package admit

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/waits"
)

// SignalSubmission is a signal at the door: an input, like a task, that
// wakes the oldest task waiting for its name and key (package waits).
type SignalSubmission struct {
	Caller Caller
	// Params is the signal; its SentBy is the door's to write.
	Params waits.SignalParams
	// By names the sender within its caller: the tenant and its token
	// ("acme, token ci-deploy (7)") for a tenant, the person for the
	// operator, the source for a webhook.
	By string
	// Own is the caller's own tenant — a token's, a webhook source's —
	// for the callers that may signal only their own tasks.
	Own string
}

// signalRules say how a caller's signal is admitted. The checks of the
// signal itself — waits.SignalParams.Validate's (name, key, payload size
// and JSON, retention, dedupe key), the tasks' rules for a tenant's name
// and a payload's encoding — apply to every caller that may send one.
type signalRules struct {
	// sender is how SentBy starts: who sent the signal, as operators
	// see it ("webhook:stripe").
	sender string
	// own: the signal is for the caller's own tenant (Own), which
	// Params.Tenant may repeat; another is refused. The operator's may
	// be for any tenant.
	own bool
}

// The signal caller table. A tenant sends through the API, for itself
// only; the operator, with agentctl or client.Database, for any tenant; a
// webhook source, for its own tenant. Schedules and parent tasks send no
// signal: they have no row, and are refused.
var signalCallers = map[Caller]signalRules{
	Tenant:   {sender: "tenant", own: true},
	Operator: {sender: "operator"},
	Webhook:  {sender: "webhook", own: true},
}

// AdmitSignal checks s and returns the signal to send, its defaults
// filled and SentBy written. Errors are *agentledger.InvalidError naming
// the field (422, exit 2); nothing is written.
func (d *Door) AdmitSignal(s SignalSubmission) (waits.SignalParams, error) {
	r, ok := signalCallers[s.Caller]
	if !ok {
		return s.Params, fmt.Errorf("admit: no signal rules for caller %s", s.Caller)
	}
	p := s.Params
	if r.own {
		if s.Own == "" {
			return p, fmt.Errorf("admit: a %s's signal needs the caller's own tenant", s.Caller)
		}
		if p.Tenant != "" && p.Tenant != s.Own {
			return p, agentledger.Invalid("tenant", "the sender is tenant %q: it cannot signal tenant %q's tasks", s.Own, p.Tenant)
		}
		p.Tenant = s.Own
	}
	p.SentBy = r.sender
	if s.By != "" {
		p.SentBy += ":" + s.By
	}
	if err := p.Validate(); err != nil {
		return p, err
	}
	// The payload becomes a step's result in a task's row: the tasks'
	// rules for its encoding (UTF-8, no \u0000 jsonb cannot store), and
	// for the tenant's name.
	t := claims.EnqueueParams{Tenant: p.Tenant, Kind: "signal", Payload: p.Payload}
	if err := t.Validate(); err != nil {
		return p, err
	}
	return p, nil
}

// Signal admits s and sends it through db (a pool, or the caller's
// transaction: the webhook inbox's): it wakes the oldest task waiting for
// it, or is kept for one until it expires. A dedupe key sent before with
// the same signal is Sent.Duplicate; with another, agentledger.ErrKeyReuse.
func (d *Door) Signal(ctx context.Context, db waits.DB, s SignalSubmission) (waits.Sent, error) {
	p, err := d.AdmitSignal(s)
	if err != nil {
		return waits.Sent{}, err
	}
	if db == nil {
		return waits.Sent{}, errors.New("admit: no database to send the signal through")
	}
	return waits.NewStore(db).Send(ctx, p)
}
