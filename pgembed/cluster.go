package pgembed

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Config says where the cluster lives and how it is tuned.
type Config struct {
	// StateDir is the absolute path of the state directory; required.
	StateDir string
	// Settings are extra postgresql.conf settings applied at every start via -c
	// (e.g. fsync=off for tests, max_connections). listen_addresses, port and
	// unix_socket_directories are managed by pgembed and cannot be set.
	Settings map[string]string
	// Logger receives info logs; nil discards them.
	Logger *slog.Logger
	// RunAsUser is, when running as root, the unprivileged OS user the server runs as; default "postgres".
	RunAsUser string
	// MustExist refuses a state directory without a cluster with a
	// *NoClusterError rather than initialising one there (nor creating
	// the directory): for a client, where a mistyped path would otherwise
	// make a new, empty cluster.
	MustExist bool
	// LockTimeout bounds the wait for another process starting or
	// stopping the cluster; default DefaultLockTimeout. After
	// lockNoticeAfter of it, a warning says whom Start waits for.
	LockTimeout time.Duration
}

// Cluster is one process's registration as a user of a running private PostgreSQL cluster.
type Cluster struct {
	layout   layout
	log      *slog.Logger
	settings map[string]string
	runAs    *runAs // nil: run as ourselves
	binDir   string
	version  string
	conn     connInfo
	created  bool // this Start initialised the cluster
	started  bool // this Start started the server (it was not running)

	lockTimeout time.Duration

	mu    sync.Mutex
	users *os.File // shared flock on users.lock; nil once closed
}

// Start initialises the cluster in cfg.StateDir if needed, starts the server
// if it is not running, and registers this process as a user until Close.
func Start(ctx context.Context, cfg Config) (*Cluster, error) {
	if cfg.StateDir == "" || !filepath.IsAbs(cfg.StateDir) {
		return nil, fmt.Errorf("pgembed: StateDir must be an absolute path, got %q", cfg.StateDir)
	}
	if err := validateSettings(cfg.Settings); err != nil {
		return nil, err
	}
	if root := filepath.Clean(cfg.StateDir); cfg.MustExist && !HasCluster(root) {
		return nil, &NoClusterError{StateDir: root, Others: OtherClusters(root)}
	}
	c := &Cluster{
		layout:   layout{root: filepath.Clean(cfg.StateDir)},
		log:      cfg.Logger,
		settings: maps.Clone(cfg.Settings),

		lockTimeout: cfg.LockTimeout,
	}
	if c.lockTimeout <= 0 {
		c.lockTimeout = DefaultLockTimeout
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	if os.Geteuid() == 0 {
		var err error
		if c.runAs, err = lookupRunAs(cfg.RunAsUser); err != nil {
			if _, _, ferr := findBinaries(""); ferr != nil {
				return nil, ferr // no PostgreSQL at all is the problem to report
			}
			return nil, err
		}
	}
	if err := mkdirAllMode(c.layout.root, 0o755); err != nil {
		return nil, err
	}
	if c.runAs != nil {
		if err := checkTraversable(c.layout.root, c.runAs); err != nil {
			return nil, err
		}
	}

	startLock, err := openLockFile(c.layout.startLock())
	if err != nil {
		return nil, err
	}
	defer startLock.Close() // releases the lock
	if err := lockCtx(ctx, startLock, syscall.LOCK_EX, c.startLockWait()); err != nil {
		return nil, err
	}
	markHolder(startLock)
	defer unmarkHolder(startLock)
	users, err := openLockFile(c.layout.usersLock())
	if err != nil {
		return nil, err
	}
	// Only a Close holding start.lock takes users.lock exclusively, briefly.
	if err := lockCtx(ctx, users, syscall.LOCK_SH, lockWait{timeout: c.lockTimeout}); err != nil {
		users.Close()
		return nil, err
	}
	c.users = users
	if err := c.bringUp(ctx); err != nil {
		users.Close()
		return nil, err
	}
	return c, nil
}

// bringUp initialises and starts the server as needed; the caller holds start.lock.
func (c *Cluster) bringUp(ctx context.Context) error {
	if err := c.prepareLogDir(); err != nil {
		return err
	}
	pgVersion, err := c.existingVersion()
	if err != nil {
		return err
	}
	if c.binDir, c.version, err = findBinaries(pgVersion); err != nil {
		return err
	}
	if pgVersion == "" {
		if err := c.initCluster(ctx); err != nil {
			return err
		}
		c.created = true
	} else if c.conn, err = readConnInfo(c.layout.connFile()); err != nil {
		return fmt.Errorf("pgembed: the cluster in %s exists but its connection details cannot be read (%v); "+
			"the superuser password is unknown, so remove %s to start over with an empty cluster",
			c.DataDir(), err, c.layout.root)
	} else if c.conn.complete() {
		// Written by an older version: add the host and database, so that
		// a pg_dump need not guess them.
		if err := writeConnInfo(c.layout.connFile(), c.conn); err != nil {
			c.log.Warn("could not add the database name to conn.json", "path", c.layout.connFile(), "error", err)
		}
	}

	started := false
	pi, running, err := c.runningServer(ctx)
	if err != nil {
		return err
	}
	if running {
		if pi.port > 0 && pi.port != c.conn.Port {
			c.conn.Port = pi.port
			if err := writeConnInfo(c.layout.connFile(), c.conn); err != nil {
				return err
			}
		}
		c.log.Info("reusing running PostgreSQL", "data_dir", c.DataDir(), "port", c.conn.Port, "pid", pi.pid, "version", c.version)
	} else {
		if err := c.startServer(ctx); err != nil {
			return err
		}
		started = true
	}
	c.started = started

	conn, err := c.readyConn(ctx)
	if err == nil {
		err = ensureDatabase(ctx, conn)
		conn.Close(context.WithoutCancel(ctx))
	}
	if err != nil && started {
		stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), (pgCtlTimeout+5)*time.Second)
		defer cancel()
		if serr := c.stopIfLastUser(stopCtx, c.users); serr != nil {
			c.log.Warn("could not stop PostgreSQL after a failed start", "data_dir", c.DataDir(), "error", serr)
		}
	}
	return err
}

// prepareLogDir creates log/ and hands it to the server user.
func (c *Cluster) prepareLogDir() error {
	if err := os.MkdirAll(c.layout.logDir(), 0o750); err != nil {
		return fmt.Errorf("pgembed: %w", err)
	}
	if err := c.runAs.chown(c.layout.logDir()); err != nil {
		return err
	}
	if _, err := os.Stat(c.layout.logFile()); err == nil {
		return c.runAs.chown(c.layout.logFile())
	}
	return nil
}

// existingVersion returns the major version in pgdata/PG_VERSION, or "" when
// there is no cluster yet.
func (c *Cluster) existingVersion() (string, error) {
	dataDir := c.DataDir()
	uid, err := ownerUID(dataDir)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("pgembed: %w", err)
	}
	if uid >= 0 && uid != c.runAs.serverUID() {
		return "", fmt.Errorf("pgembed: data directory %s is owned by uid %d, but the server would run as %s; "+
			"run as the user that created it, or use another state directory (--state-dir or %s)",
			dataDir, uid, c.runAs.describe(), StateDirEnv)
	}
	b, err := os.ReadFile(filepath.Join(dataDir, "PG_VERSION"))
	if err == nil {
		return strings.TrimSpace(string(b)), nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("pgembed: %w", err)
	}
	if rmErr := os.Remove(dataDir); rmErr == nil { // an empty directory: treat as absent
		return "", nil
	}
	return "", fmt.Errorf("pgembed: %s exists but is not a PostgreSQL data directory (no PG_VERSION); remove it to start over", dataDir)
}

// runningServer reports whether a postmaster for our data directory is alive,
// removing a stale postmaster.pid and waiting out a server that is shutting down.
// A server alive where this process cannot see it is an error.
func (c *Cluster) runningServer(ctx context.Context) (pidInfo, bool, error) {
	deadline := time.Now().Add(pgCtlTimeout * time.Second)
	for {
		pi, exists, err := readPidFile(c.layout.pidFile())
		if !exists {
			return pi, false, nil
		}
		if err == nil && !isOurPostmaster(pi.pid, c.DataDir()) {
			if err := c.servedElsewhere(pi); err != nil {
				return pi, false, err
			}
		}
		if err == nil && !processAlive(pi.pid) {
			// Left by a server that died. PostgreSQL replaces such a file
			// itself after checking that no orphaned backend still uses its
			// shared memory, a check that removing the file would skip.
			c.log.Info("postmaster.pid names a dead process; PostgreSQL will replace it", "data_dir", c.DataDir(), "pid", pi.pid)
			return pi, false, nil
		}
		if err != nil || !isOurPostmaster(pi.pid, c.DataDir()) {
			// Garbage, or a pid reused by another process: PostgreSQL would
			// refuse to start, so the file must go.
			c.log.Warn("removing stale postmaster.pid", "data_dir", c.DataDir(), "pid", pi.pid)
			if err := os.Remove(c.layout.pidFile()); err != nil && !errors.Is(err, fs.ErrNotExist) {
				c.log.Warn("cannot remove stale postmaster.pid", "data_dir", c.DataDir(), "error", err)
			}
			return pi, false, nil
		}
		if pi.status != "stopping" || time.Now().After(deadline) || ctx.Err() != nil {
			return pi, true, nil
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// plural is one or many by n.
func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// stopIfLastUser stops the server when no other Cluster holds users.lock;
// the caller holds start.lock and is about to close users, its own registration.
func (c *Cluster) stopIfLastUser(ctx context.Context, users *os.File) error {
	// Converting the shared lock is not atomic and may drop it on failure,
	// which is fine: the caller is unregistering.
	err := flock(users, syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		// Said at info: whoever stops agentd expects the server to stop
		// with it, and should learn who keeps it up.
		if who := holders(users); len(who) > 0 {
			c.log.Info(fmt.Sprintf("left PostgreSQL running: still used by %d other %s", len(who), plural(len(who), "process", "processes")),
				"users", strings.Join(who, ", "), "data_dir", c.DataDir())
		} else {
			c.log.Info("left PostgreSQL running: still used by other processes", "data_dir", c.DataDir())
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("pgembed: flock %s: %w", users.Name(), err)
	}
	return c.stopServer(ctx)
}

// Close unregisters this process and stops the server (pg_ctl stop -m fast)
// only if no other process still uses it; calling it again does nothing.
func (c *Cluster) Close(ctx context.Context) error { return c.close(ctx, true) }

// Shared reports whether another process is registered as a user of the
// server now (on Linux, read from /proc/locks): Close will then leave it
// running. False when it cannot tell, or once closed.
func (c *Cluster) Shared() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.users != nil && len(holders(c.users)) > 0
}

// Leave unregisters this process and leaves the server running whoever
// else uses it: for a last user that knows of clients the lock does not
// see (daemons connected by URL).
func (c *Cluster) Leave(ctx context.Context) error { return c.close(ctx, false) }

func (c *Cluster) close(ctx context.Context, stop bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	users := c.users
	if users == nil {
		return nil
	}
	c.users = nil
	startLock, err := openLockFile(c.layout.startLock())
	if err != nil {
		users.Close()
		return err
	}
	if err = lockCtx(ctx, startLock, syscall.LOCK_EX, c.startLockWait()); err == nil && stop {
		markHolder(startLock)
		err = c.stopIfLastUser(ctx, users)
		unmarkHolder(startLock)
	}
	users.Close() // unregister before letting the next Start in
	startLock.Close()
	return err
}

// URL returns the connection URL for database, with the superuser's password.
func (c *Cluster) URL(database string) string { return c.conn.url(database) }

// Created reports whether Start initialised the cluster: its state
// directory held none.
func (c *Cluster) Created() bool { return c.created }

// Started reports whether this Start started the server (it was not
// running); it stops again when its last user closes.
func (c *Cluster) Started() bool { return c.started }

// Port returns the loopback TCP port the server listens on.
func (c *Cluster) Port() int { return c.conn.Port }

// DataDir returns the PostgreSQL data directory.
func (c *Cluster) DataDir() string { return c.layout.dataDir() }

// Version returns the PostgreSQL version of the server binaries in use, e.g. "15.18".
func (c *Cluster) Version() string { return c.version }

// String describes the cluster without its password.
func (c *Cluster) String() string {
	return fmt.Sprintf("pgembed.Cluster{data_dir=%s port=%d}", c.DataDir(), c.conn.Port)
}

// GoString describes the cluster without its password, for %#v.
func (c *Cluster) GoString() string { return c.String() }

// Crash stops the server as a crash would (pg_ctl stop -m immediate: no
// checkpoint, WAL not yet written from shared memory is lost — an
// asynchronous commit, say) and starts it again, which runs crash
// recovery. Failure drills use it; other users of the cluster see their
// connections fail and must reconnect.
func (c *Cluster) Crash(ctx context.Context) error {
	if err := c.stopServerMode(ctx, "immediate"); err != nil {
		return err
	}
	return c.startServer(ctx)
}

// Restart stops the server with a fast shutdown (every session is cut) and
// starts it again, on the same port unless another process took it
// meanwhile. Other users of the cluster see their connections fail and must
// reconnect: failure drills use it.
func (c *Cluster) Restart(ctx context.Context) error {
	if err := c.stopServer(ctx); err != nil {
		return err
	}
	return c.startServer(ctx)
}
