package pgembed

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

const (
	// lockPollInterval is how often a blocked lock is retried while honouring ctx.
	lockPollInterval = 50 * time.Millisecond
	// lockNoticeAfter is how long a wait for a lock goes unmentioned: a
	// start or stop of a second or so is routine.
	lockNoticeAfter = 500 * time.Millisecond
	// DefaultLockTimeout is how long Start and Close wait for another
	// process to finish starting or stopping the cluster: pg_ctl's own
	// bound on a start or stop, and some.
	DefaultLockTimeout = 2 * time.Minute
)

// openLockFile opens (creating if needed) a lock file; each call yields its own
// open file description, so flocks on two results exclude each other even in one process.
func openLockFile(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("pgembed: %w", err)
	}
	return f, nil
}

// flock calls flock(2), retrying on EINTR.
func flock(f *os.File, how int) error {
	for {
		err := syscall.Flock(int(f.Fd()), how)
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}

// lockWait says how long to wait for a lock, and what to say meanwhile.
type lockWait struct {
	timeout time.Duration // 0: until ctx ends
	// waiting, when set, is called once the wait has lasted lockNoticeAfter.
	waiting func()
	// gaveUp words the error after timeout.
	gaveUp func() error
}

// lockCtx takes the lock how (LOCK_SH or LOCK_EX), polling until it is
// free, ctx ends or w's timeout passes.
func lockCtx(ctx context.Context, f *os.File, how int, w lockWait) error {
	began := time.Now()
	noticed := false
	for {
		err := flock(f, how|syscall.LOCK_NB)
		if err == nil {
			return nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			return fmt.Errorf("pgembed: flock %s: %w", f.Name(), err)
		}
		waited := time.Since(began)
		if w.timeout > 0 && waited >= w.timeout {
			if w.gaveUp != nil {
				return w.gaveUp()
			}
			return fmt.Errorf("pgembed: gave up after %s waiting for lock %s", w.timeout, f.Name())
		}
		if !noticed && waited >= lockNoticeAfter && w.waiting != nil {
			noticed = true
			w.waiting()
		}
		t := time.NewTimer(lockPollInterval)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("pgembed: waiting for lock %s: %w", f.Name(), ctx.Err())
		case <-t.C:
		}
	}
}

// startLockWait is how Start and Close wait for start.lock: they say who
// holds it, and give up after the cluster's lock timeout.
func (c *Cluster) startLockWait() lockWait {
	return lockWait{
		timeout: c.lockTimeout,
		waiting: func() {
			holder := lockHolder(c.layout.startLock())
			c.log.Warn(fmt.Sprintf("waiting for %s to finish starting or stopping the embedded PostgreSQL in %s (giving up after %s)",
				holder, c.layout.root, c.lockTimeout), "state_dir", c.layout.root, "holder", holder)
		},
		gaveUp: func() error {
			return fmt.Errorf("pgembed: gave up after %s waiting for %s to finish starting or stopping the embedded PostgreSQL in %s; "+
				"if that process hangs, stop it", c.lockTimeout, lockHolder(c.layout.startLock()), c.layout.root)
		},
	}
}

// markHolder records in a lock file just taken which process holds it, for
// whoever waits for it.
func markHolder(f *os.File) {
	if f.Truncate(0) == nil {
		_, _ = f.WriteAt([]byte(fmt.Sprintf("%d %s\n", os.Getpid(), filepath.Base(os.Args[0]))), 0)
	}
}

// unmarkHolder empties a lock file about to be released.
func unmarkHolder(f *os.File) { _ = f.Truncate(0) }

// lockHolder names the process markHolder recorded in the lock file at
// path: "pid 12 (agentd)", or "another process".
func lockHolder(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "another process"
	}
	pid, name, _ := strings.Cut(strings.TrimSpace(string(b)), " ")
	n, err := strconv.Atoi(pid)
	if err != nil || n <= 0 {
		return "another process"
	}
	if !processAlive(n) {
		// flock reaches across PID namespaces: the holder may be in another container.
		return fmt.Sprintf("another process (pid %d %s, not visible here)", n, name)
	}
	return fmt.Sprintf("pid %d (%s)", n, name)
}
