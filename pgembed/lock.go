package pgembed

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"
)

// lockPollInterval is how often a blocked lock is retried while honouring ctx.
const lockPollInterval = 50 * time.Millisecond

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

// lockCtx takes the lock how (LOCK_SH or LOCK_EX), polling until it is free or ctx ends.
func lockCtx(ctx context.Context, f *os.File, how int) error {
	for {
		err := flock(f, how|syscall.LOCK_NB)
		if err == nil {
			return nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			return fmt.Errorf("pgembed: flock %s: %w", f.Name(), err)
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
