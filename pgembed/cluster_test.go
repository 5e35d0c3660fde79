package pgembed

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentledger/agentledger/internal/test/logbuf"
)

func TestStartFromNothing(t *testing.T) {
	t.Parallel()
	dir := newStateDir(t)
	logs := &logbuf.Buffer{}
	c, err := Start(t.Context(), testConfig(t, dir, logs))
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })

	conn := connectT(t, c, DatabaseName)
	var one int
	var db, listen, sockets, fsync string
	if err := conn.QueryRow(t.Context(), "SELECT 1, current_database(), current_setting('listen_addresses'), "+
		"current_setting('unix_socket_directories'), current_setting('fsync')").Scan(&one, &db, &listen, &sockets, &fsync); err != nil {
		t.Fatal(err)
	}
	if one != 1 || db != DatabaseName || listen != "127.0.0.1" || sockets != "" || fsync != "off" {
		t.Errorf("got %d %q listen=%q sockets=%q fsync=%q", one, db, listen, sockets, fsync)
	}
	conn.Close(t.Context())

	for path, want := range map[string]os.FileMode{
		filepath.Join(dir, "pgdata"):    0o700,
		filepath.Join(dir, "conn.json"): 0o600,
		dir:                             0o755,
	} {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != want {
			t.Errorf("%s: mode %v, want %v", path, got, want)
		}
	}
	ci, err := readConnInfo(filepath.Join(dir, "conn.json"))
	if err != nil {
		t.Fatal(err)
	}
	if ci.Port != c.Port() || ci.User != SuperUser || len(ci.Password) != 64 || ci.Host != "127.0.0.1" || ci.Database != DatabaseName {
		t.Errorf("conn.json = host %q port %d user %q password length %d database %q; cluster port %d",
			ci.Host, ci.Port, ci.User, len(ci.Password), ci.Database, c.Port())
	}
	if want := fmt.Sprintf("postgres://agentledger:%s@127.0.0.1:%d/x?sslmode=disable", ci.Password, c.Port()); c.URL("x") != want {
		t.Errorf("URL(x) is not the expected URL")
	}
	if c.DataDir() != filepath.Join(dir, "pgdata") {
		t.Errorf("DataDir = %s", c.DataDir())
	}
	if _, err := os.Stat(filepath.Join(dir, "log", "postgres.log")); err != nil {
		t.Error(err)
	}
	if !pidFileExists(t, dir) {
		t.Error("no postmaster.pid while running")
	}

	closeT(t, c)
	if pidFileExists(t, dir) {
		t.Error("postmaster.pid still there after the last Close")
	}
	if err := c.Close(t.Context()); err != nil {
		t.Errorf("second Close: %v", err)
	}
	out := logs.String() + fmt.Sprintf("%v %+v %#v %s", c, c, c, c)
	if strings.Contains(out, ci.Password) {
		t.Error("password appears in logs or in the cluster's formatted value")
	}
	for _, msg := range []string{"initialised a new PostgreSQL cluster: the state directory held none", "started PostgreSQL", "stopped PostgreSQL"} {
		if !strings.Contains(logs.String(), msg) {
			t.Errorf("logs lack %q", msg)
		}
	}
}

func TestRestartReusesData(t *testing.T) {
	t.Parallel()
	dir := newStateDir(t)
	c := startT(t, dir)
	conn := connectT(t, c, DatabaseName)
	if _, err := conn.Exec(t.Context(), "CREATE TABLE kept (v text); INSERT INTO kept VALUES ('hello')"); err != nil {
		t.Fatal(err)
	}
	conn.Close(t.Context())
	before, err := os.ReadFile(filepath.Join(dir, "conn.json"))
	if err != nil {
		t.Fatal(err)
	}
	closeT(t, c)

	logs := &logbuf.Buffer{}
	c2, err := Start(t.Context(), testConfig(t, dir, logs))
	if err != nil {
		t.Fatalf("second Start: %v", err)
	}
	t.Cleanup(func() { c2.Close(context.Background()) })
	var v string
	if err := connectT(t, c2, DatabaseName).QueryRow(t.Context(), "SELECT v FROM kept").Scan(&v); err != nil || v != "hello" {
		t.Fatalf("table after restart: %q, %v", v, err)
	}
	after, err := os.ReadFile(filepath.Join(dir, "conn.json"))
	if err != nil {
		t.Fatal(err)
	}
	if string(before) != string(after) {
		t.Error("conn.json changed on restart")
	}
	if strings.Contains(logs.String(), "initialised") {
		t.Error("initdb ran again")
	}
	closeT(t, c2)
}

func TestStalePidFile(t *testing.T) {
	t.Parallel()
	dir := newStateDir(t)
	closeT(t, startT(t, dir))
	pidFile := filepath.Join(dir, "pgdata", "postmaster.pid")
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string]string{
		"live non-postgres pid": fmt.Sprintf("%d\n%s\ngarbage\n", os.Getpid(), filepath.Join(dir, "pgdata")),
		"garbage":               "not a pid\n\x00\x01",
		"dead pid":              fmt.Sprintf("%d\n%s\n", dead.Process.Pid, filepath.Join(dir, "pgdata")),
	} {
		if err := os.WriteFile(pidFile, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if os.Geteuid() == 0 { // as a server-written file would be
			ra, err := lookupRunAs("")
			if err != nil {
				t.Fatal(err)
			}
			ra.chown(pidFile)
		}
		c := startT(t, dir)
		var one int
		if err := connectT(t, c, DatabaseName).QueryRow(t.Context(), "SELECT 1").Scan(&one); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if pid := postmasterPID(t, dir); pid == os.Getpid() {
			t.Errorf("%s: postmaster.pid still names the test process", name)
		}
		closeT(t, c)
	}
}

func TestTwoUsersShareServer(t *testing.T) {
	t.Parallel()
	dir := newStateDir(t)
	c1 := startT(t, dir)
	c2 := startT(t, dir)
	if c1.Port() != c2.Port() {
		t.Fatalf("ports differ: %d, %d", c1.Port(), c2.Port())
	}
	pid := postmasterPID(t, dir)
	closeT(t, c1)
	var one int
	if err := connectT(t, c2, DatabaseName).QueryRow(t.Context(), "SELECT 1").Scan(&one); err != nil {
		t.Fatalf("second user cannot query after the first closed: %v", err)
	}
	if got := postmasterPID(t, dir); got != pid {
		t.Errorf("server restarted: pid %d, was %d", got, pid)
	}
	closeT(t, c2)
	if pidFileExists(t, dir) {
		t.Error("server still running after the last Close")
	}
}

func TestKilledUserDoesNotPinServer(t *testing.T) {
	t.Parallel()
	dir := newStateDir(t)
	c1 := startT(t, dir)
	pid := postmasterPID(t, dir)
	// A SIGKILLed process loses its flock without calling Close.
	c1.mu.Lock()
	c1.users.Close()
	c1.users = nil
	c1.mu.Unlock()

	c2 := startT(t, dir)
	if got := postmasterPID(t, dir); got != pid {
		t.Errorf("server was restarted (pid %d, was %d) instead of reused", got, pid)
	}
	closeT(t, c2)
	if pidFileExists(t, dir) {
		t.Error("server still running after the last live user closed")
	}
}

func TestRecordedPortTaken(t *testing.T) {
	t.Parallel()
	dir := newStateDir(t)
	c := startT(t, dir)
	old := c.Port()
	closeT(t, c)
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(old)))
	if err != nil {
		t.Skipf("cannot occupy port %d: %v", old, err)
	}
	defer l.Close()
	c = startT(t, dir)
	if c.Port() == old {
		t.Fatalf("still on taken port %d", old)
	}
	ci, err := readConnInfo(filepath.Join(dir, "conn.json"))
	if err != nil || ci.Port != c.Port() {
		t.Errorf("conn.json port %d (%v), want %d", ci.Port, err, c.Port())
	}
	var one int
	if err := connectT(t, c, DatabaseName).QueryRow(t.Context(), "SELECT 1").Scan(&one); err != nil {
		t.Fatal(err)
	}
	closeT(t, c)
}

// A conn.json written before it named the host and database is read, and
// completed at the next start.
func TestOldConnInfoIsCompleted(t *testing.T) {
	t.Parallel()
	dir := newStateDir(t)
	closeT(t, startT(t, dir))
	path := filepath.Join(dir, "conn.json")
	ci, err := readConnInfo(path)
	if err != nil {
		t.Fatal(err)
	}
	old, err := json.Marshal(map[string]any{"port": ci.Port, "user": ci.User, "password": ci.Password})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, old, 0o600); err != nil {
		t.Fatal(err)
	}
	c := startT(t, dir)
	defer closeT(t, c)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if got["password"] != ci.Password {
		t.Errorf("the start changed the password")
	}
	delete(got, "password") // not printed
	if got["database"] != DatabaseName || got["host"] != "127.0.0.1" || got["port"] != float64(ci.Port) {
		t.Errorf("conn.json after a start: %v, want the database and host added", got)
	}
}

func TestRunsAsRoot(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("not running as root; the server runs as the current user")
	}
	t.Parallel()
	dir := newStateDir(t)
	c := startT(t, dir)
	pgUser, err := user.Lookup(DefaultRunAsUser)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{c.DataDir(), filepath.Join(dir, "log")} {
		uid, err := ownerUID(p)
		if err != nil {
			t.Fatal(err)
		}
		if strconv.Itoa(uid) != pgUser.Uid {
			t.Errorf("%s owned by uid %d, want %s (%s)", p, uid, pgUser.Uid, DefaultRunAsUser)
		}
	}
	if uid, err := ownerUID(filepath.Join(dir, "conn.json")); err != nil || uid != 0 {
		t.Errorf("conn.json owned by uid %d (%v), want 0", uid, err)
	}
	closeT(t, c)
}

func TestRootNeedsTraversableStateDir(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("not running as root")
	}
	t.Parallel()
	parent, err := os.MkdirTemp("", "pgembed-private-*") // mode 0700, like /root
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(parent)
	_, err = Start(t.Context(), Config{StateDir: filepath.Join(parent, "state")})
	if err == nil || !strings.Contains(err.Error(), "cannot enter "+parent) || !strings.Contains(err.Error(), StateDirEnv) {
		t.Fatalf("Start: %v", err)
	}
}

func TestUnknownRunAsUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("RunAsUser only matters as root")
	}
	t.Parallel()
	_, err := Start(t.Context(), Config{StateDir: newStateDir(t), RunAsUser: "no-such-user-pgembed"})
	if err == nil || !strings.Contains(err.Error(), `"no-such-user-pgembed" does not exist`) {
		t.Fatalf("Start: %v", err)
	}
}

func TestStartWaitsForLockAndHonoursContext(t *testing.T) {
	t.Parallel()
	dir := newStateDir(t)
	f, err := openLockFile(filepath.Join(dir, "start.lock"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := flock(f, syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	_, err = Start(ctx, testConfig(t, dir, nil))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Start with start.lock held: %v", err)
	}
}

// A start lock held too long: Start says whom it waits for, then gives up
// with a message naming the holder and the state directory.
func TestStartLockWaitSaysWhoAndGivesUp(t *testing.T) {
	t.Parallel()
	dir := newStateDir(t)
	f, err := openLockFile(filepath.Join(dir, "start.lock"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := flock(f, syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	markHolder(f)
	logs := &logbuf.Buffer{}
	cfg := testConfig(t, dir, logs)
	cfg.LockTimeout = time.Second
	_, err = Start(t.Context(), cfg)
	holder := fmt.Sprintf("pid %d (%s)", os.Getpid(), filepath.Base(os.Args[0]))
	want := fmt.Sprintf("pgembed: gave up after 1s waiting for %s to finish starting or stopping the embedded PostgreSQL in %s", holder, dir)
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("Start with start.lock held: %v, want %q", err, want)
	}
	if !strings.Contains(logs.String(), "waiting for "+holder+" to finish starting or stopping") {
		t.Fatalf("Start did not say whom it waits for; logs:\n%s", logs.String())
	}
}

func TestDataDirNeedsItsVersion(t *testing.T) {
	t.Parallel()
	dir := newStateDir(t)
	data := filepath.Join(dir, "pgdata")
	if err := os.Mkdir(data, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(data, "PG_VERSION"), []byte("99\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		ra, err := lookupRunAs("")
		if err != nil {
			t.Fatal(err)
		}
		ra.chown(data)
	}
	_, err := Start(t.Context(), testConfig(t, dir, nil))
	if !errors.Is(err, ErrNoBinaries) || !strings.Contains(err.Error(), "PostgreSQL 99") {
		t.Fatalf("Start: %v", err)
	}
}

func TestInvalidConfig(t *testing.T) {
	t.Parallel()
	for _, cfg := range []Config{
		{},
		{StateDir: "relative/dir"},
		{StateDir: "/nonexistent-pgembed", Settings: map[string]string{"port": "1"}},
		{StateDir: "/nonexistent-pgembed", Settings: map[string]string{"x; rm": "1"}},
	} {
		if _, err := Start(t.Context(), cfg); err == nil {
			t.Errorf("Start(%+v) succeeded", cfg)
		}
	}
}
