package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/agentledger/agentledger/internal/pgbouncerconf"
	"github.com/agentledger/agentledger/internal/pgplan"
)

// pgbouncerAdmin is the user the benchmark reads PgBouncer's admin console
// as (SHOW CLIENTS).
const pgbouncerAdmin = "agentbench"

// findPgBouncer returns the PgBouncer binary: name if given ("off": none),
// else pgbouncer on PATH or in the sbin directories a package installs it
// to (not on a user's PATH on Debian). "" means none was found.
func findPgBouncer(name string) (string, error) {
	switch name {
	case "off":
		return "", nil
	case "":
	default:
		p, err := exec.LookPath(name)
		if err != nil {
			return "", fmt.Errorf("--pgbouncer %q: %w", name, err)
		}
		return p, nil
	}
	if p, err := exec.LookPath("pgbouncer"); err == nil {
		return p, nil
	}
	for _, dir := range []string{"/usr/sbin", "/usr/local/sbin", "/sbin"} {
		if p, err := exec.LookPath(filepath.Join(dir, "pgbouncer")); err == nil {
			return p, nil
		}
	}
	return "", nil
}

// PgBouncer is a PgBouncer process in transaction pooling mode in front of
// the benchmark's server, for every database on it.
type PgBouncer struct {
	cmd      *exec.Cmd
	dir      string
	port     int
	poolSize int
	exited   chan struct{}
}

// startPgBouncer writes a configuration into a temporary directory and
// starts bin on a free port of 127.0.0.1. As root it runs as the postgres
// user (PgBouncer refuses to run as root), which then owns the directory.
func startPgBouncer(ctx context.Context, bin string, server *pgconn.Config, poolSize, maxClients int, prepared bool) (*PgBouncer, error) {
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			return nil, errors.New("PgBouncer refuses to run as root and there is no postgres user to run it as")
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	}
	dir, err := os.MkdirTemp("", "agentbench-pgbouncer-")
	if err != nil {
		return nil, err
	}
	b := &PgBouncer{dir: dir, poolSize: poolSize, exited: make(chan struct{})}
	fail := func(err error) (*PgBouncer, error) {
		os.RemoveAll(dir)
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fail(err)
	}
	b.port = ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	// The fallback database "*" serves each run's fresh database by the
	// name the client asks for; clients are not authenticated (auth_type
	// any), PgBouncer logs in to the server as the benchmark does. Each
	// server connection gets the daemon's session settings
	// (docs/deployment.md, "Behind PgBouncer"). The file holds the
	// server's password: it is readable by its owner only and removed at
	// Stop.
	// PgBouncer refuses an empty value (password=''): a server that takes
	// the benchmark without a password gets none.
	password := ""
	if server.Password != "" {
		password = " password=" + pgbouncerconf.Value(server.Password)
	}
	// Set only when asked: PgBouncer before 1.21 does not know it.
	keep := ""
	if prepared {
		keep = "max_prepared_statements = 200\n"
	}
	conf := fmt.Sprintf(`[databases]
* = host=%s port=%d user=%s%s connect_query=%s

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = %d
unix_socket_dir =
auth_type = any
admin_users = %s
pool_mode = transaction
default_pool_size = %d
reserve_pool_size = 0
max_client_conn = %d
max_db_connections = 0
server_login_retry = 1
ignore_startup_parameters = extra_float_digits
logfile = %s
pidfile = %s
%s`, pgbouncerconf.Value(server.Host), server.Port, pgbouncerconf.Value(server.User), password,
		pgbouncerconf.Value(pgplan.ConnectQuery()), b.port,
		pgbouncerAdmin, poolSize, maxClients, filepath.Join(dir, "pgbouncer.log"), filepath.Join(dir, "pgbouncer.pid"), keep)
	ini := filepath.Join(dir, "pgbouncer.ini")
	if err := os.WriteFile(ini, []byte(conf), 0o600); err != nil {
		return fail(err)
	}
	if cred != nil {
		for _, p := range []string{dir, ini} {
			if err := os.Chown(p, int(cred.Uid), int(cred.Gid)); err != nil {
				return fail(err)
			}
		}
	}
	b.cmd = exec.Command(bin, ini)
	// Should this program die without stopping it, PgBouncer stops too.
	b.cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGTERM}
	out, err := os.Create(filepath.Join(dir, "stdout.log"))
	if err != nil {
		return fail(err)
	}
	defer out.Close()
	b.cmd.Stdout, b.cmd.Stderr = out, out
	if err := b.cmd.Start(); err != nil {
		return fail(fmt.Errorf("starting PgBouncer: %w", err))
	}
	go func() { _ = b.cmd.Wait(); close(b.exited) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", b.addr(), time.Second)
		if err == nil {
			c.Close()
			return b, nil
		}
		select {
		case <-b.exited:
		case <-ctx.Done():
		case <-time.After(20 * time.Millisecond):
			if time.Now().Before(deadline) {
				continue
			}
		}
		log := b.log()
		b.Stop()
		return nil, fmt.Errorf("PgBouncer did not start listening on %s: %s", b.addr(), log)
	}
}

func (b *PgBouncer) addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(b.port)) }

// log returns the tail of PgBouncer's output, which names no secret.
func (b *PgBouncer) log() string {
	out, _ := os.ReadFile(filepath.Join(b.dir, "stdout.log"))
	l, _ := os.ReadFile(filepath.Join(b.dir, "pgbouncer.log"))
	s := strings.TrimSpace(string(out) + string(l))
	if len(s) > 2000 {
		s = "…" + s[len(s)-2000:]
	}
	return s
}

// Stop ends PgBouncer (SIGINT: at once, closing its connections) and
// removes its directory. It may be called more than once.
func (b *PgBouncer) Stop() {
	if b.cmd.Process != nil {
		_ = b.cmd.Process.Signal(syscall.SIGINT)
		select {
		case <-b.exited:
		case <-time.After(5 * time.Second):
			_ = b.cmd.Process.Kill()
			<-b.exited
		}
	}
	os.RemoveAll(b.dir)
}

// URL returns dbURL (a daemon's URL to the server) pointed at PgBouncer.
func (b *PgBouncer) URL(dbURL string) (string, error) {
	if !strings.HasPrefix(dbURL, "postgres://") && !strings.HasPrefix(dbURL, "postgresql://") {
		return dbURL + " host=127.0.0.1 port=" + strconv.Itoa(b.port) + " sslmode=disable", nil
	}
	u, err := url.Parse(dbURL)
	if err != nil { // url.Error quotes the URL, password included
		return "", errors.New("the database URL is not a valid URL")
	}
	u.Host = b.addr()
	q := u.Query()
	q.Set("sslmode", "disable")
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// Admin connects to PgBouncer's admin console.
func (b *PgBouncer) Admin(ctx context.Context) (*pgx.Conn, error) {
	cfg, err := pgx.ParseConfig(fmt.Sprintf("host=127.0.0.1 port=%d dbname=pgbouncer user=%s sslmode=disable", b.port, pgbouncerAdmin))
	if err != nil {
		return nil, err
	}
	cfg.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol // the console knows no extended protocol
	c, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connecting to PgBouncer's admin console: %w", err)
	}
	return c, nil
}

// clientsByApp counts PgBouncer's clients of database db by their
// application_name (SHOW CLIENTS).
func clientsByApp(ctx context.Context, admin *pgx.Conn, db string) (map[string]int, error) {
	rows, err := admin.Query(ctx, "SHOW CLIENTS")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	iDB, iApp := -1, -1
	for i, f := range rows.FieldDescriptions() {
		switch f.Name {
		case "database":
			iDB = i
		case "application_name":
			iApp = i
		}
	}
	if iDB < 0 || iApp < 0 {
		return nil, errors.New("PgBouncer's SHOW CLIENTS has no database or application_name column")
	}
	n := map[string]int{}
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			return nil, err
		}
		if fmt.Sprint(vals[iDB]) == db {
			n[fmt.Sprint(vals[iApp])]++
		}
	}
	return n, rows.Err()
}
