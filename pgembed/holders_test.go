package pgembed

import (
	"bufio"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentledger/agentledger/internal/test/logbuf"
)

func TestLockHolders(t *testing.T) {
	t.Parallel()
	locks := `1: FLOCK  ADVISORY  READ  4242 08:01:131090 0 EOF
2: FLOCK  ADVISORY  READ  99 08:01:131090 0 EOF
2: -> FLOCK  ADVISORY  WRITE 77 08:01:131090 0 EOF
3: POSIX  ADVISORY  WRITE 55 08:01:131090 0 EOF
4: FLOCK  ADVISORY  READ  4242 08:01:131090 0 EOF
5: FLOCK  ADVISORY  WRITE 31 00:1b:7 0 EOF
`
	got := lockHolders(bufio.NewScanner(strings.NewReader(locks)), 131090, 99)
	if !slices.Equal(got, []int{4242}) {
		t.Fatalf("holders %v, want [4242]: once, not ourselves, not a waiter, no POSIX lock, not another inode", got)
	}
}

// A daemon that stops while another process still uses the cluster (an
// agentctl, a console) leaves PostgreSQL running and says so, naming the
// process; the last user stops it.
func TestCloseNamesTheUsersLeft(t *testing.T) {
	if _, err := exec.LookPath("flock"); err != nil {
		t.Skip("flock(1) is not installed")
	}
	t.Parallel()
	dir := newStateDir(t)
	logs := &logbuf.Buffer{}
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	c, err := Start(ctx, testConfig(t, dir, logs))
	if err != nil {
		t.Fatal(err)
	}
	last := startT(t, dir) // the user that stops the server at the end

	// --no-fork: flock becomes its command, so one process holds the lock
	// and its exit, which Wait observes, releases it. (With a fork the
	// lock outlived flock's exit until its child had closed its files.)
	other := exec.Command("flock", "--no-fork", "-s", filepath.Join(dir, "users.lock"), "sh", "-c", "echo held; exec sleep 60")
	stopOther := func() { _ = other.Process.Kill(); _ = other.Wait() }
	out, err := other.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = other.Process.Kill() })
	if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || line != "held\n" {
		t.Fatalf("the other user: %q %v", line, err)
	}

	closeT(t, c)
	if want := "left PostgreSQL running: still used by 1 other process"; !strings.Contains(logs.String(), want) {
		t.Fatalf("logs lack %q:\n%s", want, logs)
	}
	if want := fmt.Sprintf("(pid %d)", other.Process.Pid); !strings.Contains(logs.String(), want) {
		t.Fatalf("logs do not name the other user %s:\n%s", want, logs)
	}
	stopOther()
	closeT(t, last)
	if pidFileExists(t, dir) {
		t.Fatal("the last user's Close left PostgreSQL running")
	}
}
