package doorcases

import (
	"errors"
	"strings"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/waits"
)

// SignalCase is one rule of the door's for signals (admit.Door.Signal)
// put to every signal entrance: the signal, and what each entrance makes
// of it — "woke" (a task of acme's waited for it), "kept" (none did),
// "invalid <field>". An entrance missing from Want cannot express the
// case (a webhook's and the API's payload is JSON by construction; only
// the API and agentctl name a tenant).
type SignalCase struct {
	Case    string
	Name    string
	Key     string // each entrance sends Key + "/" + its name: its own waiter
	Payload string
	Tenant  string
	// Wait: a task of acme's waits for the signal when it is sent.
	Wait bool
	Want map[string]string
}

// SignalEntrances are the ways a signal comes in: admit's
// TestEverySignalEntranceThroughTheDoor runs all but agentctl,
// cmd/agentctl's TestSignalThroughTheDoor that one.
var SignalEntrances = []string{"api", "agentctl", "client", "webhook"}

// SignalCases are the signal door's rules.
var SignalCases = []SignalCase{
	{Case: "a task waits for it", Name: "payment.settled", Key: "order-1", Payload: `{"amount":1500}`, Wait: true,
		Want: signalAll("woke")},
	{Case: "nobody waits for it yet", Name: "payment.settled", Key: "order-2",
		Want: signalAll("kept")},
	{Case: "empty name", Name: "", Key: "order-3",
		Want: signalAll("invalid name")},
	{Case: "name too long", Name: strings.Repeat("n", waits.MaxNameLen+1), Key: "order-4",
		Want: signalAll("invalid name")},
	{Case: "name with a space", Name: "payment settled", Key: "order-5",
		Want: signalAll("invalid name")},
	{Case: "empty key", Name: "payment.settled", Key: "",
		Want: signalAll("invalid key")},
	{Case: "key too long", Name: "payment.settled", Key: strings.Repeat("k", waits.MaxKeyLen),
		Want: signalAll("invalid key")},
	{Case: "payload not JSON", Name: "payment.settled", Key: "order-8", Payload: `{"amount":`,
		Want: map[string]string{"agentctl": "invalid payload", "client": "invalid payload"}},
	{Case: "payload too large", Name: "payment.settled", Key: "order-9", Payload: `"` + strings.Repeat("p", waits.MaxPayload) + `"`,
		Want: signalAll("invalid payload")},
	{Case: "payload jsonb cannot store", Name: "payment.settled", Key: "order-10", Payload: `{"a":"x\u0000"}`,
		Want: signalAll("invalid payload")},
	{Case: "another tenant", Name: "payment.settled", Key: "order-11", Tenant: "globex",
		Want: map[string]string{"api": "invalid tenant", "agentctl": "kept"}},
	{Case: "malformed tenant", Name: "payment.settled", Key: "order-12", Tenant: "a b",
		Want: map[string]string{"api": "invalid tenant", "agentctl": "invalid tenant"}},
}

func signalAll(outcome string) map[string]string {
	m := map[string]string{}
	for _, e := range SignalEntrances {
		m[e] = outcome
	}
	return m
}

// SignalOutcome words what became of a signal sent: its state, or the
// field its refusal names ("--payload (file)" and "NAME" as "payload" and
// "name").
func SignalOutcome(s *waits.Signal, err error) string {
	var ie *agentledger.InvalidError
	switch {
	case errors.As(err, &ie):
		f, _, _ := strings.Cut(strings.TrimPrefix(ie.Field, "--"), " ")
		return "invalid " + strings.ToLower(f)
	case err != nil:
		return "error: " + err.Error()
	case s == nil:
		return "no signal"
	case s.State == "consumed":
		return "woke"
	case s.State == "pending":
		return "kept"
	}
	return s.State
}
