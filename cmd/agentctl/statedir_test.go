package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A --state-dir with no cluster is refused, naming where the clusters
// are, and nothing is created there; migrate up is the one command that
// initialises a cluster, and says so.
func TestStateDirWithoutCluster(t *testing.T) {
	t.Parallel()
	dir, err := os.MkdirTemp("", "agentctl-statedir-*")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if err := os.Chmod(dir, 0o755); err != nil { // as root the server would run as postgres
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
	real, typo := filepath.Join(dir, "real"), filepath.Join(dir, "typo")
	run := func(args ...string) (stdout, stderr string, code int) {
		t.Helper()
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(), "DATABASE_URL=", "AGENTLEDGER_STATE_DIR="+real, statusFileEnv+"=", "GORACE=atexit_sleep_ms=0")
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			code = exit.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return out.String(), errb.String(), code
	}

	// (Which other clusters it names depends on the machine: root's
	// default state directory may hold one.)
	_, stderr, code := run("--state-dir", typo, "list")
	refusal := "agentctl: no embedded PostgreSQL cluster in state directory " + typo
	hint := "\nhint: agentd creates one on its first start there (or `agentctl --state-dir " + typo + " migrate up` does); " +
		"to use another, pass its --state-dir or set $AGENTLEDGER_STATE_DIR, or --database-url for an existing server\n"
	if code != 1 || !strings.HasPrefix(stderr, refusal) || !strings.HasSuffix(stderr, hint) || strings.Count(stderr, "\n") != 2 {
		t.Errorf("list in a state dir with no cluster: exit %d, stderr\n%s\nwant exit 1, %q…%q", code, stderr, refusal, hint)
	}
	if _, err := os.Stat(typo); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the refused command made %s (%v)", typo, err)
	}

	stdout, stderr, code := run("migrate", "up")
	if code != 0 || !strings.HasPrefix(stderr, "agentctl: initialised a new embedded PostgreSQL cluster: embedded PostgreSQL ") ||
		!strings.Contains(stderr, "(data "+filepath.Join(real, "pgdata")) || !strings.Contains(stdout, "database is at version") {
		t.Fatalf("migrate up where there is no cluster: exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
	if _, stderr, code := run("migrate", "up"); code != 0 || strings.Contains(stderr, "initialised") {
		t.Errorf("migrate up again: exit %d, stderr %s", code, stderr)
	}

	_, stderr, code = run("--state-dir", typo, "list")
	if first, _, _ := strings.Cut(stderr, "\n"); code != 1 || !strings.HasPrefix(first, refusal+"; there ") || !strings.Contains(first, " "+real) {
		t.Errorf("list in a state dir with no cluster, one in $AGENTLEDGER_STATE_DIR: exit %d, stderr\n%s\nwant it to name %s", code, stderr, real)
	}
	// No agentd runs on it: agentctl starts the server, and says which
	// database it reads (an operator with DATABASE_URL unset in this
	// shell would otherwise read it unawares).
	_, stderr, code = run("list")
	if first, rest, _ := strings.Cut(stderr, "\n"); code != 0 ||
		!strings.HasPrefix(first, "agentctl: started the embedded PostgreSQL, no agentd running on it (set DATABASE_URL for a server of your own): embedded PostgreSQL ") ||
		!strings.Contains(first, "(data "+filepath.Join(real, "pgdata")) || rest != "no tasks\n" {
		t.Errorf("list in the cluster: exit %d, stderr %q", code, stderr)
	}
}
