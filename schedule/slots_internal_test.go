package schedule

import (
	"testing"
	"time"
)

// bruteWalk counts the slots from first through now one by one.
func bruteWalk(c compiled, first, now time.Time) due {
	if first.After(now) {
		return due{Next: first}
	}
	d := due{Latest: first, Count: 1}
	for {
		nt := c.next(d.Latest)
		if nt.IsZero() || nt.After(now) {
			d.Next = nt
			return d
		}
		d.Prev, d.Latest = d.Latest, nt
		d.Count++
	}
}

// walk agrees with counting one by one; past maxWalk slots it still finds
// the latest slots exactly, and its count is a lower bound.
func TestWalk(t *testing.T) {
	t.Parallel()
	at := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	for _, tc := range []struct {
		spec, tz, first, now string
	}{
		{"0 * * * *", "UTC", "2026-01-10T04:00:00Z", "2026-01-10T09:30:00Z"},
		{"0 * * * *", "UTC", "2026-01-10T04:00:00Z", "2026-01-10T04:00:00Z"},
		{"0 * * * *", "UTC", "2026-01-10T04:00:00Z", "2026-01-10T03:59:59.5Z"},
		{"@every 1s", "UTC", "2026-01-10T04:00:00Z", "2026-01-10T04:00:09.999Z"},
		{"@every 90s", "UTC", "2026-01-10T04:00:00Z", "2026-01-10T05:00:00Z"},
		{"@every 1s", "UTC", "2026-01-10T04:00:00Z", "2026-01-11T04:00:00.3Z"},   // 86401 slots
		{"* * * * * *", "UTC", "2026-01-10T04:00:00Z", "2026-01-10T07:00:00.7Z"}, // 10801
		{"* * * * * *", "UTC", "2026-01-10T04:00:00Z", "2026-01-10T04:00:00Z"},
		{"* * 9 * * *", "UTC", "2026-01-10T09:00:00Z", "2026-01-12T12:00:00Z"},   // 3 × 3600, latest 09:59:59
		{"*/7 * 9 * * *", "UTC", "2026-01-01T09:00:00Z", "2026-01-30T08:00:00Z"}, // latest on the 29th
		{"30 2 * * *", "Europe/Paris", "2026-03-27T01:30:00Z", "2026-03-31T12:00:00Z"},
		{"30 2 * * *", "Europe/Paris", "2026-10-23T00:30:00Z", "2026-10-27T12:00:00Z"},
		{"0 9 * * 1-5", "America/New_York", "2026-01-01T14:00:00Z", "2026-03-20T00:00:00Z"},
	} {
		sc := Schedule{Spec: tc.spec, Timezone: tc.tz}
		c, err := sc.compile()
		if err != nil {
			t.Fatal(err)
		}
		first, now := at(tc.first), at(tc.now)
		got, want := c.walk(first, now), bruteWalk(c, first, now)
		exact := want.Count < maxWalk
		if !got.Latest.Equal(want.Latest) || !got.Prev.Equal(want.Prev) || !got.Next.Equal(want.Next) ||
			(exact && got.Count != want.Count) || (!exact && (got.Count < maxWalk || got.Count > want.Count)) {
			t.Errorf("%s in %s from %s to %s:\n got %+v\nwant %+v", tc.spec, tc.tz, tc.first, tc.now, got, want)
		}
	}
}
