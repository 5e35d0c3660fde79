package pgembed

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// deadPID returns the pid of a process that has exited.
func deadPID(t *testing.T) int {
	t.Helper()
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	return dead.Process.Pid
}

// writePidFile writes postmaster.pid as a server would (owned by the server
// user), naming pid and port.
func writePidFile(t *testing.T, dir string, pid, port int) {
	t.Helper()
	data := filepath.Join(dir, "pgdata")
	content := fmt.Sprintf("%d\n%s\n1700000000\n%d\n\n127.0.0.1\n  5432001         0\nready   \n", pid, data, port)
	path := filepath.Join(data, "postmaster.pid")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		ra, err := lookupRunAs("")
		if err != nil {
			t.Fatal(err)
		}
		if err := ra.chown(path); err != nil {
			t.Fatal(err)
		}
	}
}

// A state directory shared by two containers: the other container's
// postmaster has a pid this process cannot see (here: a dead one), but it
// holds server.lock. Start refuses, naming the directory, and leaves the
// other server's postmaster.pid alone.
func TestStateDirServedInAnotherPIDNamespace(t *testing.T) {
	t.Parallel()
	dir := newStateDir(t)
	c := startT(t, dir)
	if !serverLockHeld(filepath.Join(dir, "server.lock")) {
		t.Fatal("the running server does not hold server.lock")
	}
	pidFile := filepath.Join(dir, "pgdata", "postmaster.pid")
	real, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	closed, err := freePort() // nothing answers there: only server.lock tells
	if err != nil {
		t.Fatal(err)
	}
	writePidFile(t, dir, deadPID(t), closed)
	_, err = Start(t.Context(), testConfig(t, dir, nil))
	if !errors.Is(err, ErrStateDirInUse) || !strings.Contains(err.Error(), "state directory "+dir+" is in use elsewhere") ||
		!strings.Contains(err.Error(), "server.lock is held") {
		t.Fatalf("Start on a directory another namespace's server uses: %v", err)
	}
	if _, statErr := os.Stat(pidFile); statErr != nil {
		t.Fatalf("Start removed the other server's postmaster.pid: %v", statErr)
	}
	if err := os.WriteFile(pidFile, real, 0o600); err != nil {
		t.Fatal(err)
	}
	closeT(t, c)
	if serverLockHeld(filepath.Join(dir, "server.lock")) {
		t.Error("server.lock still held after the server stopped")
	}
}

// A postmaster.pid whose pid is not ours but whose port answers to this
// cluster's superuser and password (a server of an older pgembed, holding
// no server.lock, in another PID namespace on a shared network; here the
// same cluster seen through a second state directory): Start refuses and
// starts no second server. A port where another server answers, one that
// knows no such password, is no sign of this cluster.
func TestStateDirServedOnItsPort(t *testing.T) {
	t.Parallel()
	running := newStateDir(t)
	c := startT(t, running)

	dir := newStateDir(t) // the same cluster, as another namespace would see it
	data := filepath.Join(dir, "pgdata")
	if err := os.Mkdir(data, 0o700); err != nil {
		t.Fatal(err)
	}
	version, err := os.ReadFile(filepath.Join(running, "pgdata", "PG_VERSION"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(data, "PG_VERSION"), version, 0o600); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		ra, err := lookupRunAs("")
		if err != nil {
			t.Fatal(err)
		}
		if err := ra.chown(data); err != nil {
			t.Fatal(err)
		}
	}
	ci, err := readConnInfo(filepath.Join(running, "conn.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := writeConnInfo(filepath.Join(dir, "conn.json"), ci); err != nil {
		t.Fatal(err)
	}
	writePidFile(t, dir, deadPID(t), c.Port())

	_, err = Start(t.Context(), testConfig(t, dir, nil))
	want := fmt.Sprintf("(it answers on its port %d)", c.Port())
	if !errors.Is(err, ErrStateDirInUse) || !strings.Contains(err.Error(), want) ||
		!strings.Contains(err.Error(), "state directory "+dir+" is in use elsewhere") {
		t.Fatalf("Start: %v, want ErrStateDirInUse saying %q", err, want)
	}
	if !pidFileExists(t, dir) {
		t.Error("Start removed postmaster.pid")
	}

	other := &Cluster{conn: connInfo{Port: c.Port(), User: ci.User, Password: "not-this-clusters"}}
	if other.servesThisCluster(c.Port()) {
		t.Error("a server that refuses the password counts as this cluster's")
	}
	closeT(t, c)
}
