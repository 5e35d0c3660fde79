package claims

import (
	"fmt"
	"testing"
)

// The lane gets a quarter of a claim, rounded up; a loop of claims of
// fewer than 4 tasks gives it a slot in every fourth, so the rotation
// keeps at least half of any claim and three quarters over small ones.
func TestTheLaneGetsAQuarter(t *testing.T) {
	h := &ClaimHint{}
	for _, c := range []struct{ n, want int }{{4, 1}, {5, 2}, {100, 25}, {1000, 250}} {
		if got := h.lane(c.n); got != c.want {
			t.Errorf("lane(%d) = %d, want %d", c.n, got, c.want)
		}
	}
	var got []int
	for _, n := range []int{1, 2, 3, 1, 1, 1, 1, 3} {
		got = append(got, h.lane(n))
	}
	if want := []int{0, 0, 0, 1, 0, 0, 0, 1}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("claims of 1, 2, 3, 1, 1, 1, 1, 3 gave the lane %v, want %v", got, want)
	}
	if got := (*ClaimHint)(nil).lane(1); got != 0 {
		t.Errorf("without a hint, lane(1) = %d, want 0", got)
	}
}
