package notify_test

import (
	"encoding/json"
	"testing"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/argschema"
	"github.com/agentledger/agentledger/notify"
	"github.com/agentledger/agentledger/tools"
)

// The notify tool's schema, which a submitted steps task's arguments are
// checked against before it is queued, refuses what its Effect refuses
// and nothing it takes.
func TestSchemaMatchesEffect(t *testing.T) {
	t.Parallel()
	tool := notify.NewTool()
	schema, err := argschema.Parse(tool.Parameters())
	if err != nil {
		t.Fatal(err)
	}
	task := &agentledger.Task{ID: 1, Tenant: "acme"}
	for args, takes := range map[string]bool{
		`{"channel":"ops","text":"deploy finished"}`: true,
		`{"channel":"#ops-é","text":" x "}`:          true,
		`"x"`:                                        false,
		`null`:                                       false,
		`{}`:                                         false,
		`{"channel":"ops"}`:                          false,
		`{"text":"hi"}`:                              false,
		`{"channel":"ops","text":""}`:                false,
		`{"channel":"ops","text":" \n\t"}`:           false,
		`{"channel":"ops","text":5}`:                 false,
		`{"channel":"","text":"hi"}`:                 false,
		`{"channel":"my ops","text":"hi"}`:           false,
		`{"channel":"ops\u007f","text":"hi"}`:        false,
		`{"channel":"ops","text":"hi","to":"x"}`:     false,
	} {
		serr := schema.Check("arguments", json.RawMessage(args))
		_, eerr := tool.Effect(tools.Call{Task: task, StepPath: "tool/0", Args: json.RawMessage(args)})
		if (serr == nil) != takes || (eerr == nil) != takes {
			t.Errorf("%s: schema says %v, effect says %v; want both to take it: %v", args, serr, eerr, takes)
		}
	}
}
