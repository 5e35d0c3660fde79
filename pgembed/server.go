package pgembed

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

const (
	pgCtlTimeout  = 60 // seconds, for pg_ctl -t
	readyTimeout  = 30 * time.Second
	startAttempts = 3
	tailLineCount = 20
)

var settingNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.]*$`)

// managedSettings are set by pgembed itself and override Config.Settings.
var managedSettings = []string{"listen_addresses", "port", "unix_socket_directories"}

// validateSettings rejects names that are not PostgreSQL parameter names.
func validateSettings(s map[string]string) error {
	for k := range s {
		if !settingNameRE.MatchString(k) {
			return fmt.Errorf("pgembed: invalid setting name %q", k)
		}
		if slices.Contains(managedSettings, strings.ToLower(k)) {
			return fmt.Errorf("pgembed: setting %q is managed by pgembed and cannot be overridden", k)
		}
	}
	return nil
}

// serverOptions is the -o argument for pg_ctl start. pg_ctl hands it to
// /bin/sh, so every word is single-quoted.
func (c *Cluster) serverOptions() string {
	var words []string
	add := func(k, v string) { words = append(words, "-c", shellQuote(k+"="+v)) }
	keys := make([]string, 0, len(c.settings))
	for k := range c.settings {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		add(k, c.settings[k])
	}
	add("listen_addresses", "127.0.0.1")
	add("port", strconv.Itoa(c.conn.Port))
	add("unix_socket_directories", "")
	return strings.Join(words, " ")
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// run runs a server binary as the server user and returns its combined output.
func (c *Cluster) run(ctx context.Context, prog string, args ...string) ([]byte, error) {
	return c.runWith(ctx, nil, prog, args...)
}

// runWith is run, the program inheriting extra as descriptors 3, 4 ….
func (c *Cluster) runWith(ctx context.Context, extra []*os.File, prog string, args ...string) ([]byte, error) {
	cmd := c.runAs.command(ctx, c.layout.root, filepath.Join(c.binDir, prog), args...)
	cmd.ExtraFiles = extra
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	err := cmd.Run()
	return out.Bytes(), err
}

// startServer runs pg_ctl start, moving to a new port if the recorded one is
// taken. The server inherits server.lock, held, as its sign of life.
func (c *Cluster) startServer(ctx context.Context) error {
	lock, err := c.takeServerLock(ctx)
	if err != nil {
		return err
	}
	defer lock.Close() // the server holds it now, or failed to start
	newPort := !portFree(c.conn.Port)
	for attempt := 1; ; attempt++ {
		if newPort {
			p, err := freePort()
			if err != nil {
				return err
			}
			c.log.Info("recorded PostgreSQL port is in use; moving to a free one", "data_dir", c.DataDir(), "old_port", c.conn.Port, "port", p)
			c.conn.Port = p
			if err := writeConnInfo(c.layout.connFile(), c.conn); err != nil {
				return err
			}
		}
		logOffset := fileSize(c.layout.logFile())
		out, err := c.runWith(ctx, []*os.File{lock}, "pg_ctl", "-D", c.DataDir(), "-l", c.layout.logFile(),
			"-w", "-t", strconv.Itoa(pgCtlTimeout), "start", "-o", c.serverOptions())
		if err == nil {
			c.log.Info("started PostgreSQL", "data_dir", c.DataDir(), "port", c.conn.Port, "version", c.version)
			return nil
		}
		logTail := readTail(c.layout.logFile(), logOffset)
		if attempt < startAttempts && ctx.Err() == nil &&
			(strings.Contains(logTail, "Address already in use") || strings.Contains(logTail, "could not create any TCP/IP sockets")) {
			newPort = true
			continue
		}
		return fmt.Errorf("pgembed: starting PostgreSQL in %s failed: %v\npg_ctl said:\n%s\nlast lines of %s:\n%s",
			c.DataDir(), err, tail(string(out), tailLineCount), c.layout.logFile(), logTail)
	}
}

// stopServer runs pg_ctl stop -m fast; a server that is not running is not an error.
func (c *Cluster) stopServer(ctx context.Context) error { return c.stopServerMode(ctx, "fast") }

// stopServerMode runs pg_ctl stop -m mode (fast, or immediate: a crash).
func (c *Cluster) stopServerMode(ctx context.Context, mode string) error {
	out, err := c.run(ctx, "pg_ctl", "-D", c.DataDir(), "-m", mode, "-w", "-t", strconv.Itoa(pgCtlTimeout), "stop")
	if err != nil {
		if _, statErr := os.Stat(c.layout.pidFile()); errors.Is(statErr, os.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("pgembed: stopping PostgreSQL in %s failed: %v\n%s", c.DataDir(), err, tail(string(out), tailLineCount))
	}
	c.awaitServerExit(ctx)
	c.log.Info("stopped PostgreSQL", "mode", mode, "data_dir", c.DataDir(), "port", c.conn.Port, "version", c.version)
	return nil
}

// readyConn connects to database "postgres", retrying until the server accepts connections.
func (c *Cluster) readyConn(ctx context.Context) (*pgx.Conn, error) {
	cfg, err := pgx.ParseConfig(c.URL("postgres"))
	if err != nil {
		return nil, errors.New("pgembed: cannot build connection config")
	}
	deadline := time.Now().Add(readyTimeout)
	for {
		attemptCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
		conn, err := pgx.ConnectConfig(attemptCtx, cfg)
		if err == nil {
			err = conn.Ping(attemptCtx)
			if err == nil {
				cancel()
				return conn, nil
			}
			conn.Close(context.WithoutCancel(ctx))
		}
		cancel()
		if ctx.Err() != nil || time.Now().After(deadline) {
			return nil, fmt.Errorf("pgembed: PostgreSQL in %s on port %d does not accept connections: %w", c.DataDir(), c.conn.Port, err)
		}
		t := time.NewTimer(100 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
		case <-t.C:
		}
	}
}

// ensureDatabase creates database DatabaseName unless it exists.
func ensureDatabase(ctx context.Context, conn *pgx.Conn) error {
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", DatabaseName).Scan(&exists); err != nil {
		return fmt.Errorf("pgembed: checking for database %q: %w", DatabaseName, err)
	}
	if exists {
		return nil
	}
	_, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{DatabaseName}.Sanitize())
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "42P04" { // duplicate_database
		err = nil
	}
	if err != nil {
		return fmt.Errorf("pgembed: creating database %q: %w", DatabaseName, err)
	}
	return nil
}

// freePort asks the kernel for a free loopback TCP port.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("pgembed: finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// portFree reports whether the loopback TCP port can be bound now.
func portFree(port int) bool {
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return false
	}
	l.Close()
	return true
}

// fileSize returns the size of path, or 0.
func fileSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// readTail returns the last lines of path written after offset.
func readTail(path string, offset int64) string {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Sprintf("(cannot read log: %v)", err)
	}
	defer f.Close()
	const maxRead = 64 << 10
	size := fileSize(path)
	if offset >= size {
		return "(nothing new in the log)"
	}
	offset = max(offset, size-maxRead)
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return fmt.Sprintf("(cannot read log: %v)", err)
	}
	b, _ := io.ReadAll(f)
	return tail(string(b), tailLineCount)
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
