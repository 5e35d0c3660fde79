package main

import (
	"encoding/json"
	"testing"
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
