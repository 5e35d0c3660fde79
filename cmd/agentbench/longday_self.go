package main

import (
	"runtime/metrics"
	"time"
)

// selfGC reads the harness's own heap and collector from the runtime: a
// long day's fakes live in the harness, and their garbage collections
// slow the answers agentd waits for, so a window's latency can only be
// read against them.
type selfGC struct {
	samples []metrics.Sample
	prevGC  float64
}

func newSelfGC() *selfGC {
	s := &selfGC{samples: []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/cpu/classes/gc/total:cpu-seconds"}}}
	s.Lap()
	return s
}

// Lap returns the heap live after the last collection, in bytes, and the
// CPU time the collector used since the previous Lap.
func (s *selfGC) Lap() (live int64, gc time.Duration) {
	metrics.Read(s.samples)
	if v := s.samples[0].Value; v.Kind() == metrics.KindUint64 {
		live = int64(v.Uint64())
	}
	if v := s.samples[1].Value; v.Kind() == metrics.KindFloat64 {
		now := v.Float64()
		gc, s.prevGC = time.Duration((now-s.prevGC)*float64(time.Second)), now
	}
	return live, gc
}
