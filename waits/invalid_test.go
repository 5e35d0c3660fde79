package waits_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/tools"
	"github.com/agentledger/agentledger/waits"
)

// A signal with an empty or too long name or key, or a payload that is
// not JSON, is refused naming the field, and nothing is stored.
func TestBadSignalIsRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pool(t, 2)
	s := waits.NewStore(db)
	ok := waits.SignalParams{Tenant: "acme", Name: "payment.settled", Key: "order-1", Payload: json.RawMessage(`{}`), SentBy: "test"}
	for _, c := range []struct {
		what  string
		edit  func(p *waits.SignalParams)
		field string
	}{
		{"an empty name", func(p *waits.SignalParams) { p.Name = "" }, "name"},
		{"a name of 129 characters", func(p *waits.SignalParams) { p.Name = strings.Repeat("n", waits.MaxNameLen+1) }, "name"},
		{"a name with a space", func(p *waits.SignalParams) { p.Name = "payment settled" }, "name"},
		{"an empty key", func(p *waits.SignalParams) { p.Key = "" }, "key"},
		{"a key of 256 bytes", func(p *waits.SignalParams) { p.Key = strings.Repeat("k", waits.MaxKeyLen+1) }, "key"},
		{"a key with a newline", func(p *waits.SignalParams) { p.Key = "order\n1" }, "key"},
		{"a payload that is not JSON", func(p *waits.SignalParams) { p.Payload = json.RawMessage(`{"amount": 1`) }, "payload"},
		{"a payload too large", func(p *waits.SignalParams) {
			p.Payload = json.RawMessage(`"` + strings.Repeat("x", waits.MaxPayload) + `"`)
		}, "payload"},
		{"an idempotency key of 256 characters", func(p *waits.SignalParams) { p.DedupeKey = strings.Repeat("i", 256) }, "idempotency_key"},
		{"no sender", func(p *waits.SignalParams) { p.SentBy = "" }, "sent_by"},
		{"a retention of years", func(p *waits.SignalParams) { p.Retention = 3 * 365 * 24 * time.Hour }, "retention"},
	} {
		p := ok
		c.edit(&p)
		_, err := s.Send(ctx, p)
		invalid(t, c.what, err, c.field)
	}
	if n := rows(t, db, "signals"); n != 0 {
		t.Fatalf("%d signals stored from bad input, want none", n)
	}
	if _, err := s.Send(ctx, ok); err != nil { // the test can pass: a good one is stored
		t.Fatal(err)
	}
	if n := rows(t, db, "signals"); n != 1 {
		t.Fatalf("%d signals stored, want the good one", n)
	}
}

// The wait tools refuse bad arguments before anything is recorded: a
// signal name or key empty or too long, a timeout of zero or of years, a
// timer of neither or both, a wait for a child that does not exist. Each
// error names the field; no wait is stored.
func TestBadWaitIsRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pool(t, 2)
	s := waits.NewStore(db)
	task := newTask(t, db)
	byName := map[string]tools.Tool{}
	for _, tool := range waits.Tools(s) {
		byName[tool.Name()] = tool
	}
	soon := time.Now().Add(2 * 365 * 24 * time.Hour).UTC().Format(time.RFC3339)
	for _, c := range []struct {
		tool, args, field string
	}{
		{waits.ToolSignal, `{"signal": "", "key": "order-1"}`, "signal"},
		{waits.ToolSignal, fmt.Sprintf(`{"signal": %q, "key": "order-1"}`, strings.Repeat("s", waits.MaxNameLen+1)), "signal"},
		{waits.ToolSignal, `{"signal": "payment.settled", "key": ""}`, "key"},
		{waits.ToolSignal, fmt.Sprintf(`{"signal": "payment.settled", "key": %q}`, strings.Repeat("k", waits.MaxKeyLen+1)), "key"},
		{waits.ToolSignal, `{"signal": "payment.settled", "key": "order-1", "timeout": "0s"}`, "timeout"},
		{waits.ToolSignal, `{"signal": "payment.settled", "key": "order-1", "timeout": "87600h"}`, "timeout"},
		{waits.ToolSignal, `{"signal": "payment.settled", "key": "order-1", "timeout": "soon"}`, "timeout"},
		{waits.ToolTimer, `{"for": "0s"}`, "for"},
		{waits.ToolTimer, `{"for": "43800h"}`, "for"},
		{waits.ToolTimer, `{}`, "for"},
		{waits.ToolTimer, `{"for": "1m", "until": "2030-01-01T00:00:00Z"}`, "for"},
		{waits.ToolTimer, fmt.Sprintf(`{"until": %q}`, soon), "until"},
		{waits.ToolTimer, `{"until": "tomorrow"}`, "until"},
		{waits.ToolChildren, `{"timeout": "0s"}`, "timeout"},
		{waits.ToolChildren, `{"timeout": "20000h"}`, "timeout"},
		{waits.ToolChildren, `{"mode": "most"}`, "mode"},
		{waits.ToolChildren, `{"on_failure": "ignore"}`, "on_failure"},
	} {
		_, err := byName[c.tool].Effect(tools.Call{Task: task, StepPath: "tool/0", Args: json.RawMessage(c.args)})
		invalid(t, c.tool+" "+c.args, err, c.field)
	}

	// A whole number is a key (a template that took an order id from an
	// earlier result renders one); a key of another type says which field
	// and what it must be.
	e, err := byName[waits.ToolSignal].Effect(tools.Call{Task: task, StepPath: "tool/1", Args: json.RawMessage(`{"signal":"paid","key":1201}`)})
	if err != nil || !strings.Contains(string(e.Request), `"key":"1201"`) {
		t.Fatalf("a numeric key: %s %v", e.Request, err)
	}
	for _, args := range []string{`{"signal":"paid","key":12.5}`, `{"signal":"paid","key":true}`} {
		if _, err := byName[waits.ToolSignal].Effect(tools.Call{Task: task, StepPath: "tool/1", Args: json.RawMessage(args)}); err == nil ||
			!strings.Contains(err.Error(), "key must be a string or a whole number") {
			t.Errorf("%s: %v", args, err)
		}
	}
	if _, err := byName[waits.ToolSignal].Effect(tools.Call{Task: task, StepPath: "tool/1", Args: json.RawMessage(`{"signal":7,"key":"k"}`)}); err == nil ||
		!strings.Contains(err.Error(), `argument "signal" must be a string, not a JSON number`) {
		t.Errorf("a numeric signal name: %v", err)
	}

	// Children are checked when the call is performed: the task has none,
	// or the one named is not its child.
	other := newTask(t, db)
	for _, args := range []string{`{}`, fmt.Sprintf(`{"tasks": [%d]}`, other.ID)} {
		e, err := byName[waits.ToolChildren].Effect(tools.Call{Task: task, StepPath: "tool/0", Args: json.RawMessage(args)})
		if err != nil {
			t.Fatalf("%s: %v", args, err)
		}
		_, err = e.Perform(ctx, ledger.Call{})
		invalid(t, waits.ToolChildren+" "+args, err, "tasks")
	}
	if err := s.CheckChildren(ctx, task.ID, task.Generation, waits.ChildrenSpec{Tasks: []int64{other.ID}}); err == nil {
		t.Fatal("CheckChildren: a task that is no child passed")
	}
	if n := rows(t, db, "waits"); n != 0 {
		t.Fatalf("%d waits stored from bad input, want none", n)
	}
	// The test can pass: a good call is recorded.
	e, err = byName[waits.ToolSignal].Effect(tools.Call{Task: task, StepPath: "tool/0", Args: json.RawMessage(`{"signal": "payment.settled", "key": "order-1", "timeout": "1m"}`)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Perform(ctx, ledger.Call{}); err == nil {
		t.Fatal("a wait with no signal did not park its task")
	}
	if n := rows(t, db, "waits"); n != 1 {
		t.Fatalf("%d waits stored, want the good one", n)
	}
}
