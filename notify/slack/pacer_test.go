package slack

import (
	"testing"
	"time"
)

func TestPacerTake(t *testing.T) {
	t.Parallel()
	t0 := time.Now()
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	p := newPacer(time.Second, 10, 2) // 1s per channel; 10/s over all after 2 at once
	for i, c := range []struct {
		ch   string
		at   time.Time
		wait time.Duration
	}{
		{"a", ms(0), 0},                      // burst
		{"b", ms(0), 0},                      // burst
		{"c", ms(0), 100 * time.Millisecond}, // workspace rate
		{"c", ms(100), 0},
		{"a", ms(150), 850 * time.Millisecond}, // a's interval
		{"d", ms(200), 0},                      // a's wait holds up no one
		{"a", ms(1000), 0},
		{"a", ms(1500), 500 * time.Millisecond},
	} {
		if got := p.take(c.ch, c.at); got != c.wait {
			t.Fatalf("take %d (%s at %s): wait %s, want %s", i, c.ch, c.at.Sub(t0), got, c.wait)
		}
	}
	p.rekey("a", "C1")
	if got := p.take("C1", ms(1500)); got != 500*time.Millisecond {
		t.Fatalf("rekeyed: wait %s", got)
	}
	if got := p.take("a", ms(1500)); got != 0 {
		t.Fatalf("old key still paced: wait %s", got)
	}

	off := newPacer(0, 0, 0)
	for range 3 {
		if got := off.take("a", t0); got != 0 {
			t.Fatalf("unpaced: wait %s", got)
		}
	}
}
