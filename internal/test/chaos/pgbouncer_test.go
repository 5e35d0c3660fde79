package chaos

import (
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/agentledger/agentledger/internal/pgplan"
)

// A short round with every daemon behind PgBouncer in transaction pooling
// mode: poll-only wake-ups, no prepared statements, no session state.
func TestChaosThroughPgBouncer(t *testing.T) {
	skipShort(t)
	drill(t, options{tasks: envInt(t, "CHAOS_TASKS", 60), agents: envInt(t, "CHAOS_AGENTS", 5),
		seconds: envInt(t, "CHAOS_SECONDS", 10), pgbouncer: pgbouncerBin(t)})
}

// pgbouncerBin finds PgBouncer — $CHAOS_PGBOUNCER, else on PATH, else
// Debian's /usr/sbin/pgbouncer (not on a user's PATH) — or skips t, saying
// so even where go test shows nothing of a passing package.
func pgbouncerBin(t *testing.T) string {
	t.Helper()
	name := os.Getenv("CHAOS_PGBOUNCER")
	if name == "" {
		name = "pgbouncer"
		if _, err := exec.LookPath(name); err != nil {
			name = "/usr/sbin/pgbouncer"
		}
	}
	bin, err := exec.LookPath(name)
	if err != nil {
		skipVisibly(t, "pgbouncer is not installed, so the PgBouncer chaos round did not run "+
			"(Debian: apt-get install pgbouncer; .ci/run installs it)")
	}
	if os.Geteuid() == 0 { // PgBouncer refuses to run as root
		if _, err := user.Lookup("postgres"); err != nil {
			skipVisibly(t, "running as root and there is no postgres user to run PgBouncer as, so the PgBouncer chaos round did not run")
		}
	}
	return bin
}

// skipVisibly skips t with reason. Without -v, go test prints nothing of a
// package that passes, t.Skip's reason included, so the reason also goes
// to the terminal (or, with none, to stderr, which go test shows when run
// in the package's directory without arguments): a round that did not run
// must not pass unseen.
func skipVisibly(t *testing.T, reason string) {
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

// guardQuery is the check of the database's identity as
// docs/deployment.md has PgBouncer's connect_query make it: an error of
// the check (a database not migrated yet, a role that may not) must not
// undo the settings before it, which share its implicit transaction.
const guardQuery = `DO $$BEGIN PERFORM agentledger_check_ids(); ` +
	`EXCEPTION WHEN OTHERS THEN RAISE WARNING USING MESSAGE = SQLERRM; END$$`

// startPgBouncer runs PgBouncer (bin) in transaction pooling mode in front
// of the world's database and returns the URL to reach the database
// through it.
func startPgBouncer(t *testing.T, w *world, bin string) string {
	t.Helper()
	u, err := url.Parse(w.url)
	must(t, err)
	pass, _ := u.User.Password()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()

	dir := filepath.Join(w.dir, "pgbouncer")
	must(t, os.MkdirAll(dir, 0o777))
	must(t, os.Chmod(dir, 0o777)) // PgBouncer may run as another user
	ini := filepath.Join(dir, "pgbouncer.ini")
	// Each server connection gets the daemon's session settings and checks
	// the server's identity (ids advance after a failover: through a
	// transaction pooler the daemon's own connections outlive it), as
	// docs/deployment.md has a deployment do.
	conf := fmt.Sprintf(`[databases]
chaos = host=%s port=%s dbname=chaos user=%s password=%s connect_query='%s'

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = %d
unix_socket_dir =
auth_type = any
pool_mode = transaction
max_client_conn = 1000
default_pool_size = 40
reserve_pool_size = 10
server_login_retry = 1
logfile = %s
pidfile = %s
`, u.Hostname(), u.Port(), u.User.Username(), pass, pgplan.ConnectQuery()+"; "+guardQuery, port, filepath.Join(dir, "pgbouncer.log"), filepath.Join(dir, "pgbouncer.pid"))
	must(t, os.WriteFile(ini, []byte(conf), 0o644))

	cmd := exec.Command(bin, ini)
	if os.Geteuid() == 0 { // PgBouncer refuses to run as root
		pg, err := user.Lookup("postgres")
		must(t, err) // pgbouncerBin found it
		uid, _ := strconv.Atoi(pg.Uid)
		gid, _ := strconv.Atoi(pg.Gid)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
	}
	out, err := os.Create(filepath.Join(dir, "stdout.log"))
	must(t, err)
	cmd.Stdout, cmd.Stderr = out, out
	must(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
		out.Close()
	})
	waitFor(t, "PgBouncer listening", 10*time.Second, func() (bool, string) {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second)
		if err != nil {
			b, _ := os.ReadFile(filepath.Join(dir, "stdout.log"))
			return false, string(b)
		}
		c.Close()
		return true, ""
	})
	pu := *u
	pu.Host = fmt.Sprintf("127.0.0.1:%d", port)
	return pu.String()
}
