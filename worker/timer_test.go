//go:build linux

package worker

import (
	"fmt"
	"slices"
	"syscall"
	"testing"
	"time"
)

// BenchmarkShortWait reports how late a short wait wakes on a Go timer,
// as the claim cooldown waits, and on nanosleep(2) (the median over b.N
// waits, late-µs): on Linux the runtime's netpoller waits in whole
// milliseconds, so a sub-millisecond cooldown lasts about a millisecond
// (worker.Config.ClaimCooldown, BENCHMARKS.md).
//
//	go test ./worker -run '^$' -bench ShortWait -benchtime 300x
func BenchmarkShortWait(b *testing.B) {
	nanosleep := func(d time.Duration) {
		ts := syscall.NsecToTimespec(int64(d))
		for syscall.Nanosleep(&ts, &ts) == syscall.EINTR {
		}
	}
	for _, d := range []time.Duration{100 * time.Microsecond, 500 * time.Microsecond, time.Millisecond} {
		for _, way := range []struct {
			name string
			wait func(time.Duration)
		}{{"timer", time.Sleep}, {"nanosleep", nanosleep}} {
			b.Run(fmt.Sprintf("%s/%s", way.name, d), func(b *testing.B) {
				late := make([]time.Duration, 0, b.N)
				for b.Loop() {
					began := time.Now()
					way.wait(d)
					late = append(late, time.Since(began)-d)
				}
				slices.Sort(late)
				b.ReportMetric(float64(late[len(late)/2].Microseconds()), "late-µs")
			})
		}
	}
}
