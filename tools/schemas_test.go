package tools_test

import (
	"encoding/json"
	"testing"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/admit"
	"github.com/agentledger/agentledger/argschema"
	"github.com/agentledger/agentledger/tools"
)

// argsCase is arguments a built-in tool is called with, whether its
// schema (what a steps task is checked against before it is queued)
// and its Effect (what the step runs) take them.
type argsCase struct {
	args           string
	schema, effect bool
}

// checkSchema checks that a tool's schema never refuses what its
// Effect takes (the submit check would refuse a task that runs) and
// refuses the usual mistakes as Effect does; what only Effect refuses
// (a URL that is not absolute, …) is still refused when the step runs.
func checkSchema(t *testing.T, tool tools.Tool, cases []argsCase) {
	t.Helper()
	schema, err := argschema.Parse(tool.Parameters())
	if err != nil {
		t.Fatalf("%s: %v", tool.Name(), err)
	}
	task := &agentledger.Task{ID: 1, Tenant: "acme"}
	for _, c := range cases {
		serr := schema.Check("arguments", json.RawMessage(c.args))
		_, eerr := tool.Effect(tools.Call{Task: task, StepPath: "tool/0", Args: json.RawMessage(c.args)})
		if (serr == nil) != c.schema || (eerr == nil) != c.effect {
			t.Errorf("%s %s: schema says %v, effect says %v; want them to take it: %v, %v",
				tool.Name(), c.args, serr, eerr, c.schema, c.effect)
		}
		if serr != nil && eerr == nil {
			t.Errorf("%s %s: the schema refuses what the tool takes: %v", tool.Name(), c.args, serr)
		}
	}
}

func TestBuiltinSchemasMatchEffects(t *testing.T) {
	t.Parallel()
	req, err := tools.NewHTTPRequest(tools.HTTPConfig{})
	if err != nil {
		t.Fatal(err)
	}
	checkSchema(t, req, []argsCase{
		{`{"method":"POST","url":"https://billing.example/charges","body":{"n":1},"headers":{"X-A":"1"}}`, true, true},
		{`{"method":"post","url":"https://billing.example/charges"}`, true, true},
		{`{"method":"Delete","url":"https://billing.example/charges/1"}`, true, true},
		{`"GET https://billing.example"`, false, false},
		{`{}`, false, false},
		{`{"method":"GET"}`, false, false},
		{`{"url":"https://billing.example"}`, false, false},
		{`{"method":"FETCH","url":"https://billing.example"}`, false, false},
		{`{"method":"GET","url":"https://billing.example","timeout":5}`, false, false},
		{`{"method":"GET","url":"https://billing.example","headers":{"X-A":1}}`, false, false},
		{`{"method":"GET","url":"billing.example"}`, true, false},
	})
	checkSchema(t, tools.NewCreateTask(&admit.Door{}), []argsCase{
		{`{"kind":"report","queue":"bulk","payload":{"n":1},"priority":5}`, true, true},
		{`{"kind":"report","queue":""}`, true, true},
		{`{"kind":"report","payload":"x"}`, true, true},
		{`[]`, false, false},
		{`{}`, false, false},
		{`{"queue":"bulk"}`, false, false},
		{`{"kind":"a report"}`, false, false},
		{`{"kind":"report","priority":101}`, false, false},
		{`{"kind":"report","priority":1.5}`, false, false},
		{`{"kind":"report","after":"x"}`, false, false},
	})
}
