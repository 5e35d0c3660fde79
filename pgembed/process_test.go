package pgembed

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"testing"
)

const helperDirEnv = "PGEMBED_TEST_HELPER_STATE_DIR"

// TestHelperProcess is not a test: run by TestOtherProcessSharesAndDies in a
// child process, it starts the cluster, says "ready" and waits to be killed.
func TestHelperProcess(t *testing.T) {
	dir := os.Getenv(helperDirEnv)
	if dir == "" {
		t.Skip("helper process for TestOtherProcessSharesAndDies")
	}
	c, err := Start(context.Background(), Config{StateDir: dir, Settings: testSettings})
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper Start:", err)
		os.Exit(2)
	}
	fmt.Printf("ready %d\n", c.Port())
	select {} // until SIGKILL
}

func TestOtherProcessSharesAndDies(t *testing.T) {
	t.Parallel()
	dir := newStateDir(t)
	child := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$")
	child.Env = append(os.Environ(), helperDirEnv+"="+dir)
	var stderr bytes.Buffer
	child.Stderr = &stderr
	stdout, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	killed := false
	defer func() {
		if !killed {
			child.Process.Kill()
			child.Wait()
		}
	}()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		child.Process.Kill()
		child.Wait()
		killed = true
		t.Fatalf("helper did not get ready: %v; stderr:\n%s", err, stderr.String())
	}
	var childPort int
	fmt.Sscanf(line, "ready %d", &childPort)
	pid := postmasterPID(t, dir)

	c := startT(t, dir)
	if c.Port() != childPort || postmasterPID(t, dir) != pid {
		t.Fatalf("did not reuse the other process's server (port %d vs %d)", c.Port(), childPort)
	}
	if !c.Shared() {
		t.Error("Shared is false while another process uses the server")
	}
	closeT(t, c)
	if !pidFileExists(t, dir) {
		t.Fatal("Close stopped the server while another process still used it")
	}

	c = startT(t, dir)
	if err := child.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	child.Wait()
	killed = true
	if postmasterPID(t, dir) != pid {
		t.Fatal("server changed when the other process was killed")
	}
	if c.Shared() {
		t.Error("Shared is true once the other process is gone")
	}
	closeT(t, c)
	if c.Shared() {
		t.Error("Shared is true once closed")
	}
	if pidFileExists(t, dir) {
		t.Error("the killed process pinned the server: still running after the last live Close")
	}
}
