package chaos

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentledger/agentledger/pgembed"
)

// formation is a pg_auto_failover formation the harness starts itself: a
// monitor and two or three data nodes on localhost, each run by its own
// pg_autoctl (as the postgres user under root: pg_autoctl refuses root).
type formation struct {
	t       *testing.T
	bin     string // pg_autoctl
	binDir  string // PostgreSQL's server binaries
	dir     string
	cred    *syscall.Credential
	monitor *node
	nodes   []*node
}

// node is one pg_autoctl process (its supervisor, keeper and postmaster
// share its process group) and its PostgreSQL.
type node struct {
	name   string
	port   int
	pgdata string
	log    string
	cmd    *exec.Cmd
	exited chan struct{}
}

// pgAutoctlBin finds pg_autoctl — $CHAOS_PG_AUTOCTL, else on PATH — or
// skips t visibly.
func pgAutoctlBin(t *testing.T) string {
	t.Helper()
	name := os.Getenv("CHAOS_PG_AUTOCTL")
	if name == "" {
		name = "pg_autoctl"
	}
	bin, err := exec.LookPath(name)
	if err != nil {
		skipVisibly(t, "pg_autoctl is not installed, so the failover round did not run "+
			"(Debian: apt-get install postgresql-15-auto-failover pg-auto-failover-cli; .ci/run installs them)")
	}
	if os.Geteuid() == 0 {
		if _, err := user.Lookup("postgres"); err != nil {
			skipVisibly(t, "running as root and there is no postgres user to run pg_autoctl as, so the failover round did not run")
		}
	}
	return bin
}

// startFormation starts the monitor and the data nodes: with synchronous
// replication a primary and two standbys in the replication quorum, of
// which a commit waits for one (number_sync_standbys 1); when async, a
// primary and one standby outside the quorum.
//
// Two standbys, because with one pg_auto_failover keeps writes available
// rather than durable: a primary whose only standby is away, or is being
// promoted, takes writes alone (wait_primary). Version 2.0 assigns that
// even to a primary it has just told to drain for a switchover (upstream
// issue #774): the old primary then acknowledges commits for seconds
// after its standby's promotion, and they are gone once it rejoins. A
// drill with one standby lost 46–58 acknowledged submissions so, in 2 of
// about 40 runs. With number_sync_standbys 1 a primary left without a
// standby blocks its writes instead, and while one standby is promoted
// the other still counts. (The price, pg_auto_failover's: it promotes only
// once two standbys have reported their WAL position, so with one of them
// down a failed primary is not replaced.)
func startFormation(t *testing.T, dir, bin string, async bool) *formation {
	t.Helper()
	f := &formation{t: t, bin: bin, dir: filepath.Join(dir, "pgaf")}
	var err error
	f.binDir, err = pgembed.FindBinaries("15") // the version pg_auto_failover is built for
	if err != nil {
		skipVisibly(t, "no PostgreSQL 15 server binaries for pg_auto_failover, so the failover round did not run: "+err.Error())
	}
	must(t, os.MkdirAll(f.dir, 0o755))
	if os.Geteuid() == 0 {
		pg, err := user.Lookup("postgres")
		must(t, err) // pgAutoctlBin found it
		uid, _ := strconv.Atoi(pg.Uid)
		gid, _ := strconv.Atoi(pg.Gid)
		f.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		must(t, os.Chown(f.dir, uid, gid))
	}
	t.Cleanup(f.stop)

	f.monitor = f.newNode("monitor")
	f.start(f.monitor, "create", "monitor", "--pgdata", f.monitor.pgdata, "--pgport", strconv.Itoa(f.monitor.port),
		"--pgctl", filepath.Join(f.binDir, "pg_ctl"), "--hostname", "127.0.0.1", "--auth", "trust", "--no-ssl", "--run")
	waitFor(t, "the pg_auto_failover monitor", time.Minute, func() (bool, string) {
		return f.query(f.monitor, "pg_auto_failover", `SELECT count(*) FROM pgautofailover.node`, new(int)), f.tail(f.monitor)
	})
	// Detect a dead node in about 2 s instead of 20, and do not wait 30 s
	// for a dead primary to demote itself before its standby takes writes.
	for name, v := range map[string]string{"health_check_period": "1000", "health_check_timeout": "1000",
		"health_check_max_retries": "1", "health_check_retry_delay": "500", "node_considered_unhealthy_timeout": "2000",
		"primary_demote_timeout": "3000"} {
		f.exec(f.monitor, "pg_auto_failover", sprintf("ALTER SYSTEM SET pgautofailover.%s = %s", name, v))
	}
	f.exec(f.monitor, "pg_auto_failover", "SELECT pg_reload_conf()")

	standbys := 2
	if async {
		standbys = 1
	}
	for i := range 1 + standbys {
		n := f.newNode(sprintf("node%d", i+1))
		f.nodes = append(f.nodes, n)
		f.start(n, "create", "postgres", "--pgdata", n.pgdata, "--pgport", strconv.Itoa(n.port),
			"--pgctl", filepath.Join(f.binDir, "pg_ctl"), "--hostname", "127.0.0.1", "--name", n.name,
			"--auth", "trust", "--no-ssl", "--dbname", "chaos", "--monitor", f.monitorURI(), "--run")
		if i == 0 {
			f.waitStates("the first node to run alone", map[string]string{n.name: "single"})
			// The drill measures replication, not the disk: the standby
			// copies this (postgresql.auto.conf) with the data.
			f.exec(n, "chaos", "ALTER SYSTEM SET fsync = off")
			f.exec(n, "chaos", "SELECT pg_reload_conf()")
		}
	}
	f.waitHealthy("the formation")
	if !async {
		// pg_auto_failover 2.0 sets this itself when a second standby in
		// the quorum joins; the drill depends on it, so it says so.
		f.autoctlTries(3, "set", "formation", "number-sync-standbys", "1", "--pgdata", f.nodes[0].pgdata)
		waitFor(t, "number_sync_standbys 1", time.Minute, func() (bool, string) {
			var n int
			ok := f.query(f.monitor, "pg_auto_failover", `SELECT number_sync_standbys FROM pgautofailover.formation WHERE formationid = 'default'`, &n)
			return ok && n == 1, sprintf("number_sync_standbys %d", n)
		})
	}
	if async {
		// A standby outside the replication quorum replicates
		// asynchronously; both, since they change roles.
		for _, n := range f.nodes {
			f.autoctlTries(3, "set", "node", "replication-quorum", "false", "--pgdata", n.pgdata)
		}
		waitFor(t, "asynchronous replication", time.Minute, func() (bool, string) {
			p := f.primary()
			if p == nil {
				return false, "no primary"
			}
			names := f.syncStandbys(p)
			return names == "", sprintf("synchronous_standby_names %q", names)
		})
	}
	f.waitHealthy("the replication mode")
	return f
}

func (f *formation) newNode(name string) *node {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	must(f.t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	return &node{name: name, port: port, pgdata: filepath.Join(f.dir, name), log: filepath.Join(f.dir, name+".log")}
}

func (f *formation) monitorURI() string {
	return sprintf("postgres://autoctl_node@127.0.0.1:%d/pg_auto_failover?sslmode=disable", f.monitor.port)
}

// URL is the database chaos on every node: a client connects to whichever
// takes writes.
func (f *formation) URL() string {
	hosts := make([]string, len(f.nodes))
	for i, n := range f.nodes {
		hosts[i] = sprintf("127.0.0.1:%d", n.port)
	}
	return sprintf("postgres://postgres@%s/chaos?sslmode=disable&target_session_attrs=read-write&connect_timeout=2",
		strings.Join(hosts, ","))
}

// all is every process of the formation, monitor last.
func (f *formation) all() []*node { return append(slices.Clone(f.nodes), f.monitor) }

// command is pg_autoctl with args, as the postgres user under root, in its
// own process group, with its configuration under the formation's
// directory.
func (f *formation) command(args ...string) *exec.Cmd {
	cmd := exec.Command(f.bin, args...)
	cmd.Dir = f.dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: f.cred}
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PG") && !strings.HasPrefix(kv, "XDG_") && !strings.HasPrefix(kv, "PATH=") && !strings.HasPrefix(kv, "HOME=") {
			env = append(env, kv)
		}
	}
	cmd.Env = append(env, "PATH="+f.binDir+":/usr/bin:/bin", "HOME="+f.dir,
		"XDG_CONFIG_HOME="+filepath.Join(f.dir, "config"), "XDG_DATA_HOME="+filepath.Join(f.dir, "data"),
		"XDG_RUNTIME_DIR="+filepath.Join(f.dir, "run"))
	return cmd
}

// start runs a long-lived pg_autoctl for n.
func (f *formation) start(n *node, args ...string) {
	out, err := os.OpenFile(n.log, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	must(f.t, err)
	cmd := f.command(args...)
	cmd.Stdout, cmd.Stderr = out, out
	must(f.t, cmd.Start())
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		out.Close()
		close(exited)
	}()
	n.cmd, n.exited = cmd, exited
}

// autoctl runs a pg_autoctl command to its end.
func (f *formation) autoctl(args ...string) string {
	out, err := f.command(args...).CombinedOutput()
	if err != nil {
		f.t.Fatalf("pg_autoctl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// autoctlTries runs a pg_autoctl command up to tries times (see
// retryAutoctl) and fails the test if it never succeeds.
func (f *formation) autoctlTries(tries int, args ...string) {
	if err := f.retryAutoctl(tries, args...); err != nil {
		f.t.Fatal(err)
	}
}

// retryAutoctl runs a pg_autoctl command up to tries times, again only
// when the monitor refused it with a deadlock against a keeper's report
// (node_active and perform_failover lock the same rows in turn): that
// refusal rolled the monitor's transaction back, so nothing had changed.
// Any other failure may have left the formation moving — a second
// switchover would undo the first — and is returned at once.
func (f *formation) retryAutoctl(tries int, args ...string) error {
	for i := 1; ; i++ {
		out, err := f.command(args...).CombinedOutput()
		if err == nil {
			return nil
		}
		if i == tries || !bytes.Contains(out, []byte("deadlock detected")) {
			return fmt.Errorf("pg_autoctl %s: %v (try %d of %d)\n%s", strings.Join(args, " "), err, i, tries, out)
		}
		f.t.Logf("pg_autoctl %s: the monitor deadlocked with a keeper (try %d of %d); again", strings.Join(args, " "), i, tries)
		time.Sleep(time.Second) // let the keeper's report finish
	}
}

// kill SIGKILLs n's process group — pg_autoctl, its keeper and the
// postmaster with its backends: the node dies as a machine does, and no
// keeper restarts its PostgreSQL in place.
func (f *formation) kill(n *node) {
	if n.cmd == nil {
		return
	}
	_ = syscall.Kill(-n.cmd.Process.Pid, syscall.SIGKILL)
	<-n.exited
	// The postmaster's children notice its death on their own: wait until
	// none holds the port.
	waitFor(f.t, n.name+"'s PostgreSQL gone", 30*time.Second, func() (bool, string) {
		c, err := net.DialTimeout("tcp", sprintf("127.0.0.1:%d", n.port), time.Second)
		if err != nil {
			return true, ""
		}
		c.Close()
		return false, "still listening"
	})
}

// stop ends every pg_autoctl: SIGINT to all at once (a fast shutdown, for
// PostgreSQL too), SIGKILL to those still running 20 s later. (One at a
// time, a node whose keeper waits on the monitor held the others' 20 s up
// in turn.)
func (f *formation) stop() {
	var running []*node
	for _, n := range f.all() {
		if n == nil || n.cmd == nil {
			continue
		}
		_ = syscall.Kill(-n.cmd.Process.Pid, syscall.SIGINT)
		running = append(running, n)
	}
	timeout, late := time.After(20*time.Second), false
	for _, n := range running {
		if !late {
			select {
			case <-n.exited:
				continue
			case <-timeout:
				late = true // this one and the rest: killed at once
			}
		}
		_ = syscall.Kill(-n.cmd.Process.Pid, syscall.SIGKILL)
		<-n.exited
	}
}

// conn connects to db on n alone.
func (f *formation) conn(ctx context.Context, n *node, db string) (*pgx.Conn, error) {
	return pgx.Connect(ctx, sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable&connect_timeout=2", n.port, db))
}

// query scans one row of sql on n into dst; false on any error.
func (f *formation) query(n *node, db, sql string, dst ...any) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	c, err := f.conn(ctx, n, db)
	if err != nil {
		return false
	}
	defer c.Close(context.Background())
	return c.QueryRow(ctx, sql).Scan(dst...) == nil
}

// try runs sql on n, whatever comes of it.
func (f *formation) try(n *node, db, sql string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if c, err := f.conn(ctx, n, db); err == nil {
		_, _ = c.Exec(ctx, sql)
		c.Close(context.Background())
	}
}

func (f *formation) exec(n *node, db, sql string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := f.conn(ctx, n, db)
	must(f.t, err)
	defer c.Close(context.Background())
	if _, err := c.Exec(ctx, sql); err != nil {
		f.t.Fatalf("%s on %s: %v", sql, n.name, err)
	}
}

// events are the monitor's record of the formation's state changes since
// it started, one line each, timed from since: what a failed round reads
// against its harness's timeline (the formation's start comes before it).
func (f *formation) events(since time.Time) string {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	c, err := f.conn(ctx, f.monitor, "pg_auto_failover")
	if err != nil {
		return "monitor unreachable: " + err.Error()
	}
	defer c.Close(context.Background())
	rows, err := c.Query(ctx, `SELECT eventtime, nodename, reportedstate::text, goalstate::text, description
		FROM pgautofailover.event ORDER BY eventid`)
	if err != nil {
		return "events unreadable: " + err.Error()
	}
	var b strings.Builder
	var at time.Time
	var name, reported, goal, desc string
	_, err = pgx.ForEachRow(rows, []any{&at, &name, &reported, &goal, &desc}, func() error {
		fmt.Fprintf(&b, "%7.2fs %s %s → %s: %s\n", at.Sub(since).Seconds(), name, reported, goal, desc)
		return nil
	})
	if err != nil {
		return "events unreadable: " + err.Error()
	}
	return b.String()
}

// states are the nodes' states as the monitor has them: name → reported
// state, "=" and the goal when they differ.
func (f *formation) states() map[string]string {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	c, err := f.conn(ctx, f.monitor, "pg_auto_failover")
	if err != nil {
		return nil
	}
	defer c.Close(context.Background())
	rows, err := c.Query(ctx, `SELECT nodename, reportedstate::text, goalstate::text FROM pgautofailover.node`)
	if err != nil {
		return nil
	}
	out := map[string]string{}
	var name, reported, goal string
	_, err = pgx.ForEachRow(rows, []any{&name, &reported, &goal}, func() error {
		out[name] = reported
		if goal != reported {
			out[name] += "→" + goal
		}
		return nil
	})
	if err != nil {
		return nil
	}
	return out
}

// waitStates waits until the monitor reports the nodes named in want in
// those states.
func (f *formation) waitStates(what string, want map[string]string) {
	f.t.Helper()
	waitFor(f.t, what, 2*time.Minute, func() (bool, string) {
		got := f.states()
		for name, s := range want {
			if got[name] != s {
				return false, sprintf("states %v", got)
			}
		}
		return true, ""
	})
}

// waitHealthy waits for a primary and every other node secondary. A new
// standby's base backup waits for a checkpoint, which the harness asks the
// primary for rather than wait out a spread one.
func (f *formation) waitHealthy(what string) {
	f.t.Helper()
	waitFor(f.t, what+": a primary, the other nodes secondary", 3*time.Minute, func() (bool, string) {
		got := f.states()
		primary, secondary := 0, 0
		for _, n := range f.nodes {
			switch got[n.name] {
			case "primary":
				primary++
			case "secondary":
				secondary++
			case "wait_primary":
				f.try(n, "chaos", "CHECKPOINT")
			}
		}
		return primary == 1 && secondary == len(f.nodes)-1, sprintf("states %v", got)
	})
}

// waitPrimary waits until the monitor names a node that takes writes.
func (f *formation) waitPrimary() *node {
	f.t.Helper()
	var p *node
	waitFor(f.t, "a primary", time.Minute, func() (bool, string) {
		p = f.primary()
		return p != nil, sprintf("states %v", f.states())
	})
	return p
}

// primary is the node that takes writes now (the monitor's word), or nil.
func (f *formation) primary() *node {
	got := f.states()
	for _, n := range f.nodes {
		if s := got[n.name]; s == "primary" || s == "wait_primary" || s == "single" {
			return n
		}
	}
	return nil
}

// promoted polls the nodes other than old, each in its own goroutine,
// until one leaves recovery, and returns it and when it did: with two
// standbys the monitor chooses which, and a node slow to answer must not
// delay seeing the other's promotion.
func (f *formation) promoted(old *node, limit time.Duration) (*node, time.Time, error) {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	type promotion struct {
		n  *node
		at time.Time
	}
	found := make(chan promotion, len(f.nodes))
	for _, n := range f.nodes {
		if n == old {
			continue
		}
		go func() {
			for ctx.Err() == nil {
				var recovering bool
				if f.query(n, "chaos", "SELECT pg_is_in_recovery()", &recovering) && !recovering {
					found <- promotion{n, time.Now()}
					return
				}
				time.Sleep(50 * time.Millisecond) // polling another process
			}
		}()
	}
	select {
	case p := <-found:
		return p.n, p.at, nil
	case <-ctx.Done():
		return nil, time.Time{}, fmt.Errorf("no node but %s was promoted within %s", old.name, limit)
	}
}

// syncStandbys is the primary's synchronous_standby_names.
func (f *formation) syncStandbys(n *node) string {
	var s string
	if !f.query(n, "chaos", "SHOW synchronous_standby_names", &s) {
		return "?"
	}
	return s
}

// tail is the end of n's log.
func (f *formation) tail(n *node) string {
	b, _ := os.ReadFile(n.log)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.Join(lines[max(0, len(lines)-5):], "\n")
}

// waitCaughtUp waits until a standby of p replicates synchronously and has
// flushed all the WAL p had written when the wait began. A standby just
// promoted by pg_auto_failover takes writes alone (wait_primary) until a
// standby follows it, and turns synchronous replication on once that one
// is within enable_sync_wal_log_threshold (16 MB) of it — "secondary"
// before it has caught up. Until then what p acknowledged
// alone exists on p alone: a failover in that window loses it, as with
// asynchronous replication (TestFailoverAsync measures that). It reports
// how long the standby took to catch up.
func (f *formation) waitCaughtUp(p *node) time.Duration {
	f.t.Helper()
	started := time.Now()
	var lsn string
	waitFor(f.t, p.name+"'s WAL position", time.Minute, func() (bool, string) {
		return f.query(p, "chaos", "SELECT pg_current_wal_lsn()::text", &lsn), "no answer"
	})
	waitFor(f.t, "the standby synchronous and caught up with "+lsn, 2*time.Minute, func() (bool, string) {
		var ok bool
		var standbys string
		f.query(p, "chaos", sprintf(`SELECT coalesce(bool_or(state = 'streaming' AND sync_state IN ('sync', 'quorum') AND flush_lsn >= '%s'), false),
			coalesce(string_agg(application_name || ' ' || state || ' ' || sync_state || ' flushed ' || coalesce(flush_lsn::text, 'nothing'), '; '), 'no standby')
			FROM pg_stat_replication`, lsn), &ok, &standbys)
		return ok, standbys
	})
	return time.Since(started)
}

// TestRetryAutoctl runs the retry against a stand-in pg_autoctl that
// answers from a script: a monitor deadlock is tried again, any other
// failure is not.
func TestRetryAutoctl(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "pg_autoctl")
	// Each call appends a line to calls and prints the next answer.
	script := `#!/bin/sh
echo call >> "$HOME/calls"
n=$(wc -l < "$HOME/calls")
case "$(sed -n "${n}p" "$HOME/answers")" in
ok) exit 0 ;;
deadlock) echo "ERROR Monitor ERROR:  deadlock detected"; exit 6 ;;
*) echo "ERROR Failed to perform failover"; exit 6 ;;
esac
`
	must(t, os.WriteFile(bin, []byte(script), 0o755))
	f := &formation{t: t, bin: bin, dir: dir}
	for _, c := range []struct {
		answers string
		calls   int
		fails   bool
	}{
		{"deadlock\nok\n", 2, false},
		{"other\nok\n", 1, true},
		{"deadlock\ndeadlock\ndeadlock\nok\n", 3, true},
	} {
		must(t, os.WriteFile(filepath.Join(dir, "answers"), []byte(c.answers), 0o644))
		_ = os.Remove(filepath.Join(dir, "calls"))
		err := f.retryAutoctl(3, "perform", "switchover")
		calls, rerr := os.ReadFile(filepath.Join(dir, "calls"))
		must(t, rerr)
		if n := strings.Count(string(calls), "\n"); n != c.calls || (err != nil) != c.fails {
			t.Errorf("answers %q: %d calls, error %v; want %d calls, failure %v", c.answers, n, err, c.calls, c.fails)
		}
	}
}
