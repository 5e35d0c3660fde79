package pgembed

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// A state directory shared by two containers (two PID namespaces) defeats
// postmaster.pid: the other container's postmaster has a pid this one
// cannot see, so the file looks stale, and starting a second server on the
// same data directory would corrupt it. Two witnesses tell such a server
// is alive:
//
//   - server.lock, which the postmaster holds (flock, on a descriptor it
//     inherits from pg_ctl) for as long as it or any backend lives; flock
//     reaches across PID namespaces on one kernel;
//   - the port in postmaster.pid, when the cluster's own superuser can log
//     in there (a server of an older pgembed holds no server.lock).

// ErrStateDirInUse is returned by Start when the state directory's server
// runs where this process cannot see or manage it: another container (PID
// namespace) or machine shares the state directory.
var ErrStateDirInUse = errors.New("pgembed: state directory in use by a server this process cannot see")

// inUseError is ErrStateDirInUse, said for one state directory.
type inUseError struct{ msg string }

func (e *inUseError) Error() string        { return e.msg }
func (e *inUseError) Is(target error) bool { return target == ErrStateDirInUse }

// serverLockWait is how long a new server waits for server.lock: the
// postmaster of a server just stopped may still be exiting.
const serverLockWait = 10 * time.Second

// probeTimeout bounds the port probe.
const probeTimeout = time.Second

// takeServerLock takes server.lock for a server about to start, which
// inherits it. A lock held longer than serverLockWait is another server's.
func (c *Cluster) takeServerLock(ctx context.Context) (*os.File, error) {
	f, err := openLockFile(c.layout.serverLock())
	if err != nil {
		return nil, err
	}
	err = lockCtx(ctx, f, syscall.LOCK_EX, lockWait{timeout: serverLockWait, gaveUp: func() error {
		return c.inUse(pidInfo{}, "a process holds its server.lock")
	}})
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// servedElsewhere returns an error when the server that postmaster.pid
// describes, whose pid is not a postmaster this process can see, is alive
// all the same.
func (c *Cluster) servedElsewhere(pi pidInfo) error {
	if serverLockHeld(c.layout.serverLock()) {
		return c.inUse(pi, "its server.lock is held")
	}
	if pi.port > 0 && c.servesThisCluster(pi.port) {
		return c.inUse(pi, fmt.Sprintf("it answers on its port %d", pi.port))
	}
	return nil
}

// inUse words ErrStateDirInUse for this state directory; pi is what
// postmaster.pid says, if anything.
func (c *Cluster) inUse(pi pidInfo, how string) error {
	what, remedy := "its PostgreSQL server", fmt.Sprintf("find the process holding %s (fuser %[1]s) and stop it", c.layout.serverLock())
	if pi.pid > 0 {
		what = fmt.Sprintf("the PostgreSQL server its postmaster.pid names (pid %d)", pi.pid)
		remedy = "stop that server, or remove " + c.layout.pidFile()
	}
	return &inUseError{fmt.Sprintf("pgembed: state directory %s is in use elsewhere: %s runs, but not as a process this one can see (%s), "+
		"so another container or machine shares the directory. Give each agentd its own state directory "+
		"(--state-dir or %s), or run one PostgreSQL and point every agentd at it with DATABASE_URL. "+
		"If nothing else should use %[1]s, %[5]s",
		c.layout.root, what, how, StateDirEnv, remedy)}
}

// serverLockHeld reports whether a live server holds server.lock.
func serverLockHeld(path string) bool {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return false // no server of this pgembed ever started here
	}
	defer f.Close() // releases a lock taken here
	return errors.Is(flock(f, syscall.LOCK_EX|syscall.LOCK_NB), syscall.EWOULDBLOCK)
}

// servesThisCluster reports whether a PostgreSQL server on the loopback
// port lets this cluster's superuser in with its password, which initdb drew
// at random for this cluster alone: a server that does is this cluster's.
func (c *Cluster) servesThisCluster(port int) bool {
	ci := c.conn
	ci.Port = port
	cfg, err := pgx.ParseConfig(ci.url("postgres"))
	if err != nil {
		return false
	}
	cfg.ConnectTimeout = probeTimeout
	ctx, cancel := context.WithTimeout(context.Background(), 2*probeTimeout)
	defer cancel()
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return false // nothing there, or another server
	}
	conn.Close(ctx)
	return true
}

// awaitServerExit waits for a stopped server's processes to let go of
// server.lock: pg_ctl stop returns once postmaster.pid is gone, just before
// the postmaster exits, and the next start must not find the lock held.
func (c *Cluster) awaitServerExit(ctx context.Context) {
	f, err := os.OpenFile(c.layout.serverLock(), os.O_RDWR, 0)
	if err != nil {
		return
	}
	defer f.Close()
	if err := lockCtx(ctx, f, syscall.LOCK_EX, lockWait{timeout: serverLockWait}); err != nil {
		c.log.Warn("a process of the stopped PostgreSQL still holds server.lock", "data_dir", c.DataDir(), "error", err)
	}
}
