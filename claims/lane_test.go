package claims

import (
	"testing"

	"github.com/agentledger/agentledger"
)

// The lane gets a quarter of a claim, rounded up. A claim of fewer than 4
// tasks gives it a slot, unless it took one within the rotation's last 3
// tasks: a newcomer after a quiet spell is in the next claim, and a stream
// of them gets a quarter of a loop of small claims.
func TestTheLaneGetsAQuarter(t *testing.T) {
	h := &ClaimHint{}
	for _, c := range []struct{ n, want int }{{4, 1}, {5, 2}, {100, 25}, {1000, 250}} {
		if got := h.lane(c.n); got != c.want {
			t.Errorf("lane(%d) = %d, want %d", c.n, got, c.want)
		}
	}
	one := []*agentledger.Task{{Tenant: "a"}}
	for i, step := range []struct {
		n           int
		want        int
		rotation    []*agentledger.Task
		laned       int
		description string
	}{
		{1, 1, one, 0, "a quiet loop's first small claim"},
		{1, 1, nil, 1, "the lane took nothing last time"},
		{1, 0, one, 0, "the lane took a task last claim"},
		{2, 0, append(one, one...), 0, "the rotation has served 1 since"},
		{3, 1, one, 0, "the rotation has served 3 since"},
		{1, 1, nil, 1, "still due"},
		{100, 25, nil, 0, "a claim of 4 or more has its quarter"},
	} {
		if got := h.lane(step.n); got != step.want {
			t.Fatalf("step %d (%s): lane(%d) = %d, want %d", i, step.description, step.n, got, step.want)
		}
		h.served("", 0, "a", step.rotation, step.laned)
	}
	if got := (*ClaimHint)(nil).lane(1); got != 0 {
		t.Errorf("without a hint, lane(1) = %d, want 0", got)
	}
}
