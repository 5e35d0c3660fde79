package main

import (
	"maps"
	"os"
	"testing"
	"time"
)

func TestServerCPUSpent(t *testing.T) {
	s := time.Second
	type procs = map[int]procCPU
	for _, c := range []struct {
		name string
		a, b serverSnap
		want map[string]time.Duration
	}{{
		name: "alive throughout: the difference",
		a:    serverSnap{procs: procs{10: {"client", 100, 40 * s}, 11: {"checkpointer", 50, 3 * s}}, reaped: 7 * s},
		b:    serverSnap{procs: procs{10: {"client", 100, 42 * s}, 11: {"checkpointer", 50, 3 * s}}, reaped: 7 * s},
		want: map[string]time.Duration{"client": 2 * s},
	}, {
		// The bug: the postmaster's reaped time grows by the backend's
		// whole lifetime (100s), of which only 0.5s were in the window.
		name: "a long-lived backend exits in the window: only its time after a",
		a:    serverSnap{procs: procs{10: {"client", 100, 100 * s}, 12: {"client", 300, 1 * s}}, reaped: 20 * s},
		b:    serverSnap{procs: procs{12: {"client", 300, 2 * s}}, reaped: 120*s + 500*time.Millisecond},
		want: map[string]time.Duration{"client": 1 * s, "exited": 500 * time.Millisecond},
	}, {
		name: "a process that started in the window: all of its time",
		a:    serverSnap{procs: procs{10: {"client", 100, 5 * s}}, reaped: 0},
		b:    serverSnap{procs: procs{10: {"client", 100, 6 * s}, 13: {"autovacuum worker", 900, 3 * s}}, reaped: 0},
		want: map[string]time.Duration{"client": 1 * s, "autovacuum worker": 3 * s},
	}, {
		// pid 10 exited after 50s of CPU (0.25s of them in the window) and
		// a new backend got the same pid: it counts whole, the old one by
		// its time after a.
		name: "a reused pid: the new process whole, the old one as exited",
		a:    serverSnap{procs: procs{10: {"client", 100, 50 * s}}, reaped: 10 * s},
		b:    serverSnap{procs: procs{10: {"client", 950, 1 * s}}, reaped: 60*s + 250*time.Millisecond},
		want: map[string]time.Duration{"client": 1 * s, "exited": 250 * time.Millisecond},
	}, {
		name: "processes that started and exited in the window: the reaped time's growth",
		a:    serverSnap{procs: procs{10: {"client", 100, 5 * s}}, reaped: 10 * s},
		b:    serverSnap{procs: procs{10: {"client", 100, 5 * s}}, reaped: 13 * s},
		want: map[string]time.Duration{"exited": 3 * s},
	}, {
		// Each exited child's time is rounded to ticks: the reaped time may
		// grow a little less than the exited processes' time at a.
		name: "rounding below zero counts nothing",
		a:    serverSnap{procs: procs{10: {"client", 100, 5 * s}}, reaped: 10 * s},
		b:    serverSnap{procs: procs{}, reaped: 15*s - 10*time.Millisecond},
		want: map[string]time.Duration{},
	}} {
		t.Run(c.name, func(t *testing.T) {
			if got := serverCPUSpent(c.a, c.b); !maps.Equal(got, c.want) {
				t.Errorf("got %v, want %v", got, c.want)
			}
		})
	}
}

func TestReadProcStat(t *testing.T) {
	st, ok := readProcStat(os.Getpid())
	if !ok {
		t.Skip("no /proc")
	}
	if st.ppid != os.Getppid() || st.start <= 0 {
		t.Errorf("readProcStat(self) = %+v: want parent %d and a start time", st, os.Getppid())
	}
	if again, _ := readProcStat(os.Getpid()); again.start != st.start {
		t.Errorf("start time changed: %d, then %d", st.start, again.start)
	}
}
