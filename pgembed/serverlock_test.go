package pgembed

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
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

// A postmaster.pid whose pid is not ours but whose port answers as
// PostgreSQL (a server of an older pgembed, or another machine's on a
// shared network): Start refuses without starting a second server.
func TestStateDirServedOnItsPort(t *testing.T) {
	t.Parallel()
	dir := newStateDir(t)
	closeT(t, startT(t, dir))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	requests := make(chan uint32, 1)
	go func() { // answers the SSLRequest as a server without TLS does
		conn, err := l.Accept()
		if err != nil {
			return
		}
		defer conn.Close()
		var req [8]byte
		if _, err := conn.Read(req[:]); err == nil {
			requests <- binary.BigEndian.Uint32(req[4:])
			_, _ = conn.Write([]byte{'N'})
		}
	}()
	port := l.Addr().(*net.TCPAddr).Port
	writePidFile(t, dir, deadPID(t), port)
	_, err = Start(t.Context(), testConfig(t, dir, nil))
	want := fmt.Sprintf("a PostgreSQL server answers on its port %d", port)
	if !errors.Is(err, ErrStateDirInUse) || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), dir) {
		t.Fatalf("Start: %v, want ErrStateDirInUse saying %q", err, want)
	}
	if code := <-requests; code != sslRequestCode {
		t.Errorf("the probe sent %d, want SSLRequest", code)
	}
	if !pidFileExists(t, dir) {
		t.Error("Start removed postmaster.pid")
	}
}
