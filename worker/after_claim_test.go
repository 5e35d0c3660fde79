package worker

import "testing"

// After a claim the loop claims again at once only when the claim filled a
// batch; when it filled every free slot but not a batch it waits for a
// slot (and the cooldown) as when none was free; when the queue gave less
// than it asked, it waits for news.
func TestAfterClaim(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		free, got, batch, want int
	}{
		{100, 100, 100, claimAgain},
		{0, 0, 100, awaitSlots},
		{38, 38, 100, awaitSlots}, // the slots bounded it: the next would take the few freed meanwhile
		{5, 5, 100, awaitSlots},
		{100, 1, 100, awaitNews},
		{38, 10, 100, awaitNews},
		{100, 0, 100, awaitNews},
	} {
		if got := afterClaim(c.free, c.got, c.batch); got != c.want {
			t.Errorf("afterClaim(free %d, got %d, batch %d) = %d, want %d", c.free, c.got, c.batch, got, c.want)
		}
	}
}
