package tools_test

import (
	"testing"

	"github.com/agentledger/agentledger/admit"
	"github.com/agentledger/agentledger/canonjson"
	"github.com/agentledger/agentledger/tools"
)

// create_task's spec as the model has always been offered it. An agent
// completion's ledger request holds each listed tool's description and
// schema, hashed in full, so any change to either makes every agent
// conversation recorded with the old spec fail its replays and retries
// with ErrKeyReuse. Change these only with a new tool name.
const (
	createTaskDescription = "Create a child task of the given kind, with an optional queue, JSON payload and priority " +
		"(0-100, lower runs first). Returns its task_id."
	createTaskParameters = `{"type":"object","additionalProperties":false,"required":["kind"],"properties":{` +
		`"kind":{"type":"string","pattern":"^[A-Za-z0-9._:-]{1,128}$"},` +
		`"queue":{"type":"string","pattern":"^[A-Za-z0-9._:-]{0,128}$"},` +
		`"payload":{"description":"the child's JSON payload; default {}"},` +
		`"priority":{"type":"integer","minimum":0,"maximum":100}}}`
)

func TestCreateTaskSpecUnchanged(t *testing.T) {
	t.Parallel()
	tool := tools.NewCreateTask(&admit.Door{})
	if got := tool.Description(); got != createTaskDescription {
		t.Errorf("description changed (breaks recorded agent conversations):\n got %s\nwant %s", got, createTaskDescription)
	}
	got, err := canonjson.Marshal(tool.Parameters())
	if err != nil {
		t.Fatal(err)
	}
	want, err := canonjson.Marshal([]byte(createTaskParameters))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Errorf("parameters changed (breaks recorded agent conversations):\n got %s\nwant %s", got, want)
	}
}
