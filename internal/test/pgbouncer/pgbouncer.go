// Package pgbouncer runs PgBouncer in transaction pooling mode in front of
// a test's database, for the tests that reach it through one as a
// deployment does (docs/deployment.md, "Behind PgBouncer").
package pgbouncer

import (
	"fmt"
	"io"
	"maps"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentledger/agentledger/internal/pgbouncerconf"
)

// Find returns the PgBouncer binary — the one $env names, else pgbouncer
// on PATH, else Debian's /usr/sbin/pgbouncer (not on a user's PATH) — or
// skips t, saying that what did not run (a phrase: "the PgBouncer chaos
// round") did not, even where go test shows nothing of a passing package.
func Find(t testing.TB, env, what string) string {
	t.Helper()
	name := os.Getenv(env)
	if name == "" {
		name = "pgbouncer"
		if _, err := exec.LookPath(name); err != nil {
			name = "/usr/sbin/pgbouncer"
		}
	}
	bin, err := exec.LookPath(name)
	if err != nil {
		SkipVisibly(t, "pgbouncer is not installed, so "+what+" did not run "+
			"(Debian: apt-get install pgbouncer; .ci/run installs it; "+env+" names another)")
	}
	if os.Geteuid() == 0 { // PgBouncer refuses to run as root
		if _, err := user.Lookup("postgres"); err != nil {
			SkipVisibly(t, "running as root and there is no postgres user to run PgBouncer as, so "+what+" did not run")
		}
	}
	return bin
}

// FindKeeping returns a PgBouncer that keeps prepared statements (1.21 or
// later): the one $PGBOUNCER_PREPARED names (.ci/run builds one where the
// distribution's is older), else the installed one if it is that recent,
// or skips t visibly, saying that what did not run.
func FindKeeping(t testing.TB, what string) string {
	t.Helper()
	if name := os.Getenv("PGBOUNCER_PREPARED"); name != "" {
		bin, err := exec.LookPath(name)
		if err != nil {
			t.Fatalf("PGBOUNCER_PREPARED=%s: %v", name, err)
		}
		if ok, v := KeepsPrepared(t, bin); !ok {
			t.Fatalf("PGBOUNCER_PREPARED=%s is PgBouncer %s, which does not keep prepared statements (1.21 or later does)", name, v)
		}
		Find(t, "PGBOUNCER_PREPARED", what) // the user to run it as
		return bin
	}
	bin := Find(t, "PGBOUNCER_PREPARED", what)
	if ok, v := KeepsPrepared(t, bin); !ok {
		SkipVisibly(t, "PgBouncer "+v+" does not keep prepared statements (1.21 or later does), so "+what+
			" did not run; PGBOUNCER_PREPARED names one that does (scripts/build-pgbouncer builds one)")
	}
	return bin
}

var versionRE = regexp.MustCompile(`PgBouncer (\d+)\.(\d+)`)

// KeepsPrepared reports whether bin is PgBouncer 1.21 or later, which can
// keep prepared statements for its clients in transaction pooling mode
// (max_prepared_statements), and its version.
func KeepsPrepared(t testing.TB, bin string) (bool, string) {
	t.Helper()
	out, err := exec.Command(bin, "--version").CombinedOutput()
	if err != nil {
		t.Fatalf("%s --version: %v\n%s", bin, err, out)
	}
	m := versionRE.FindStringSubmatch(string(out))
	if m == nil {
		t.Fatalf("%s --version: no version in %q", bin, out)
	}
	major, _ := strconv.Atoi(m[1])
	minor, _ := strconv.Atoi(m[2])
	return major > 1 || major == 1 && minor >= 21, m[1] + "." + m[2]
}

// SkipVisibly skips t with reason. Without -v, go test prints nothing of a
// package that passes, t.Skip's reason included, so the reason also goes
// to the terminal (or, with none, to stderr, which go test shows when run
// in the package's directory without arguments): a test that did not run
// must not pass unseen.
func SkipVisibly(t testing.TB, reason string) {
	t.Helper()
	if !testing.Verbose() {
		w := io.Writer(os.Stderr)
		if tty, err := os.OpenFile("/dev/tty", os.O_WRONLY, 0); err == nil {
			defer tty.Close()
			w = tty
		}
		fmt.Fprintf(w, "--- SKIP: %s: %s\n", t.Name(), reason)
	}
	t.Skip(reason)
}

// Config says how to run PgBouncer.
type Config struct {
	// URL of the database PgBouncer serves, under its own name.
	URL string
	// Dir holds PgBouncer's files; empty: a directory of its own,
	// removed when the test ends.
	Dir string
	// ConnectQuery runs on each server connection PgBouncer opens.
	ConnectQuery string
	// PoolSize and ReservePoolSize: server connections of the database.
	PoolSize, ReservePoolSize int
	// Settings are more [pgbouncer] settings, such as
	// max_prepared_statements (PgBouncer 1.21 or later).
	Settings map[string]string
}

// Start runs PgBouncer (bin) in transaction pooling mode as c says, stops
// it when t ends, and returns the URL that reaches the database through it.
func Start(t testing.TB, bin string, c Config) string {
	t.Helper()
	u, err := url.Parse(c.URL)
	if err != nil {
		t.Fatal(err)
	}
	pass, _ := u.User.Password()
	db := strings.TrimPrefix(u.Path, "/")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()

	if c.Dir == "" {
		// Not t.TempDir: its parent is closed to the user PgBouncer
		// runs as.
		dir, err := os.MkdirTemp("", "pgbouncer-")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
		c.Dir = dir
	}
	if err := os.MkdirAll(c.Dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(c.Dir, 0o777); err != nil { // PgBouncer may run as another user
		t.Fatal(err)
	}
	server := fmt.Sprintf("host=%s port=%s dbname=%s user=%s", u.Hostname(), u.Port(), db, u.User.Username())
	if pass != "" { // PgBouncer refuses an empty value
		server += " password=" + pgbouncerconf.Value(pass)
	}
	if c.ConnectQuery != "" {
		server += " connect_query=" + pgbouncerconf.Value(c.ConnectQuery)
	}
	extra := ""
	for _, k := range slices.Sorted(maps.Keys(c.Settings)) {
		extra += k + " = " + c.Settings[k] + "\n"
	}
	conf := fmt.Sprintf(`[databases]
%s = %s

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = %d
unix_socket_dir =
auth_type = any
pool_mode = transaction
max_client_conn = 1000
default_pool_size = %d
reserve_pool_size = %d
server_login_retry = 1
logfile = %s
pidfile = %s
%s`, db, server, port, c.PoolSize, c.ReservePoolSize,
		filepath.Join(c.Dir, "pgbouncer.log"), filepath.Join(c.Dir, "pgbouncer.pid"), extra)
	ini := filepath.Join(c.Dir, "pgbouncer.ini")
	if err := os.WriteFile(ini, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}

	cmd := exec.Command(bin, ini)
	if os.Geteuid() == 0 { // PgBouncer refuses to run as root
		pg, err := user.Lookup("postgres")
		if err != nil {
			t.Fatal(err) // Find checked
		}
		uid, _ := strconv.Atoi(pg.Uid)
		gid, _ := strconv.Atoi(pg.Gid)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
	}
	logPath := filepath.Join(c.Dir, "stdout.log")
	out, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		// SIGINT: shut down once the server connections are released.
		// (SIGTERM waits for every client to leave from PgBouncer 1.23 on.)
		_ = cmd.Process.Signal(syscall.SIGINT)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		out.Close()
	})
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second)
		if err == nil {
			c.Close()
			break
		}
		select {
		case <-exited:
			b, _ := os.ReadFile(logPath)
			t.Fatalf("PgBouncer exited:\n%s", b)
		default:
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(logPath)
			t.Fatalf("PgBouncer not listening after 10s:\n%s", b)
		}
		time.Sleep(20 * time.Millisecond)
	}
	pu := *u
	pu.Host = fmt.Sprintf("127.0.0.1:%d", port)
	return pu.String()
}
