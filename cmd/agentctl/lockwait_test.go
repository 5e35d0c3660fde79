package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// While another process holds the embedded cluster's start lock, agentctl
// says whom it waits for, where, and for how long at most (it waited
// silently and without limit). pgembed's tests see it give up.
func TestEmbeddedLockWaitIsSaid(t *testing.T) {
	t.Parallel()
	dir, err := os.MkdirTemp("", "agentctl-lock-*")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if err := os.Chmod(dir, 0o755); err != nil { // as root the server would run as postgres
		t.Fatal(err)
	}
	// A cluster's mark (agentctl creates none): the wait comes before it is read.
	if err := os.MkdirAll(filepath.Join(dir, "pgdata"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "pgdata", "PG_VERSION"), []byte("15\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	lock, err := os.OpenFile(filepath.Join(dir, "start.lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	// Who holds it, as pgembed records it: "pid name".
	if _, err := fmt.Fprintf(lock, "%d agentd\n", os.Getpid()); err != nil {
		t.Fatal(err)
	}

	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "agentctl")
	if err := os.Symlink(exe, bin); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--state-dir", dir, "list")
	cmd.Env = append(os.Environ(), "DATABASE_URL=", statusFileEnv+"=", "GORACE=atexit_sleep_ms=0")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill() //nolint:errcheck // a no-op once it has exited
	lines := make(chan string, 10)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	want := fmt.Sprintf("agentctl: waiting for pid %d (agentd) to finish starting or stopping the embedded PostgreSQL in %s (giving up after 2m0s)",
		os.Getpid(), dir)
	select {
	case l := <-lines:
		if l != want {
			t.Fatalf("agentctl said %q, want %q", l, want)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("agentctl did not say what it waits for")
	}
	// Ctrl-C ends the wait.
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	var rest []string
	for l := range lines {
		rest = append(rest, l)
	}
	var exit *exec.ExitError
	if err := cmd.Wait(); !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("agentctl after Ctrl-C: %v, want exit status 1; stderr:\n%s", err, strings.Join(rest, "\n"))
	}
}
