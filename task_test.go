package agentledger

import "testing"

func TestOneOf(t *testing.T) {
	for _, c := range []struct {
		in   []TaskState
		want string
	}{
		{nil, ""},
		{[]TaskState{StateDead}, "dead"},
		{[]TaskState{StateDead, StateCancelled}, "dead or cancelled"},
		{[]TaskState{StateSucceeded, StateDead, StateCancelled}, "succeeded, dead or cancelled"},
	} {
		if got := OneOf(c.in); got != c.want {
			t.Errorf("OneOf(%v) = %q, want %q", c.in, got, c.want)
		}
	}
}
