package main

import (
	"context"
	"sync/atomic"
	"time"
)

// starts records, for the latency runs of both queues, when each scheduled
// task first started, on the benchmark's monotonic clock.
type starts struct {
	base          time.Time
	lat           []int64 // enqueue → start in ns; 0: not started
	started, dups atomic.Int64
	all           chan struct{} // closed when every task has started
	// onStart, if set before the first note, is told of every first start:
	// when (on the monotonic clock) and its enqueue → start latency in ns.
	onStart func(now, lat int64)
}

func newStarts(total int) *starts {
	return &starts{base: time.Now(), lat: make([]int64, total), all: make(chan struct{})}
}

// since is the monotonic clock: ns since the run's base.
func (s *starts) since() int64 { return int64(time.Since(s.base)) }

// note records that task i, enqueued at at, starts now; a second start of
// the same task counts as a duplicate. It reports false for an index out of
// range.
func (s *starts) note(i int, at int64) bool {
	now := s.since()
	if i < 0 || i >= len(s.lat) {
		return false
	}
	lat := max(now-at, 1)
	if !atomic.CompareAndSwapInt64(&s.lat[i], 0, lat) {
		s.dups.Add(1)
		return true
	}
	if s.onStart != nil {
		s.onStart(now, lat)
	}
	if s.started.Add(1) == int64(len(s.lat)) {
		close(s.all)
	}
	return true
}

// wait waits up to d for the stragglers.
func (s *starts) wait(ctx context.Context, d time.Duration) {
	select {
	case <-s.all:
	case <-time.After(d):
	case <-ctx.Done():
	}
}

// fill fills res from what was recorded and sent, leaving the first warmup
// tasks out of the percentiles.
func (s *starts) fill(res *LatencyResult, sent Sent, warmup int) {
	res.Started = int(s.started.Load())
	res.Duplicates = s.dups.Load()
	res.Start, res.Enqueue = sent.Summarise(s.lat, warmup)
}
