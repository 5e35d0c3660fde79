package main

import (
	"encoding/json"
	"testing"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/operator"
)

// A children wait's end says which child ended it, not that all ended
// (an "any" wait leaves the others running).
func TestChildrenEnd(t *testing.T) {
	for result, want := range map[string]string{
		`{"first":44,"children":[{"task_id":43,"state":"waiting"},{"task_id":44,"state":"succeeded"}]}`: "child 44 succeeded first",
		`{"children":[{"task_id":27,"state":"dead"},{"task_id":28,"state":"waiting"}]}`:                 "child 27 ended dead",
		`{"children":[{"task_id":5,"state":"succeeded"},{"task_id":6,"state":"succeeded"}]}`:            "its 2 children succeeded",
		`{"children":[{"task_id":5,"state":"succeeded"}]}`:                                              "its child succeeded",
	} {
		if got := childrenEnd(json.RawMessage(result)); got != want {
			t.Errorf("%s: %q, want %q", result, got, want)
		}
	}
}

// show's parent and children lines: a cut list says how many there are.
func TestFamily(t *testing.T) {
	p, c := family(&operator.Relative{ID: 1, Kind: "steps", State: agentledger.StateSucceeded},
		[]operator.Relative{{ID: 5, State: agentledger.StateDead}, {ID: 6, State: agentledger.StateWaiting}}, 250)
	if p != "task 1 (steps, succeeded)" || c != "5 dead, 6 waiting (the first 2 of 250)" {
		t.Errorf("family: %q, %q", p, c)
	}
	if p, c := family(nil, nil, 0); p != "" || c != "" {
		t.Errorf("no family: %q, %q", p, c)
	}
}
