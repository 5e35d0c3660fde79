package pgembed

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"syscall"
	"time"
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
//   - the port in postmaster.pid, when a PostgreSQL answers on it (a
//     server of an older pgembed holds no server.lock).

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
	if pi.port > 0 && answersAsPostgres(pi.port) {
		return c.inUse(pi, fmt.Sprintf("a PostgreSQL server answers on its port %d", pi.port))
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

// sslRequestCode is the SSLRequest message's code: a PostgreSQL server
// answers it with one byte, 'S' or 'N', before anything else.
const sslRequestCode = 80877103

// answersAsPostgres reports whether a PostgreSQL server listens on the
// loopback port.
func answersAsPostgres(port int) bool {
	conn, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), probeTimeout)
	if err != nil {
		return false
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(probeTimeout))
	var req [8]byte
	binary.BigEndian.PutUint32(req[0:4], 8)
	binary.BigEndian.PutUint32(req[4:8], sslRequestCode)
	if _, err := conn.Write(req[:]); err != nil {
		return false
	}
	var answer [1]byte
	if _, err := conn.Read(answer[:]); err != nil {
		return false
	}
	return answer[0] == 'S' || answer[0] == 'N'
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
