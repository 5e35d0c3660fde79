package pgembed

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Not parallel: it changes PATH and searchGlobs, which parallel tests read
// only after all sequential tests have finished.
func TestMissingBinaries(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	saved := searchGlobs
	searchGlobs = nil
	defer func() { searchGlobs = saved }()

	if _, err := FindBinaries(""); !errors.Is(err, ErrNoBinaries) {
		t.Errorf("FindBinaries: %v", err)
	}
	dir, err := os.MkdirTemp("", "pgembed-test-*")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	os.Chmod(dir, 0o755)
	_, err = Start(t.Context(), Config{StateDir: dir})
	if !errors.Is(err, ErrNoBinaries) {
		t.Fatalf("Start: %v, want ErrNoBinaries", err)
	}
	for _, want := range []string{"DATABASE_URL", "apt-get install postgresql", "dnf install postgresql-server", "brew install postgresql@16"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "pgdata")); err == nil {
		t.Error("pgdata created although no binaries were found")
	}
}

func TestFindBinaries(t *testing.T) {
	t.Parallel()
	dir, version, err := findBinaries("")
	if err != nil {
		t.Fatal(err)
	}
	if !hasServerBinaries(dir) {
		t.Fatalf("%s lacks server binaries", dir)
	}
	again, err := FindBinaries(majorOf(version))
	if err != nil || again != dir {
		t.Errorf("FindBinaries(%q) = %s, %v; want %s", majorOf(version), again, err, dir)
	}
	if _, err := FindBinaries("3"); !errors.Is(err, ErrNoBinaries) || !strings.Contains(err.Error(), version) {
		t.Errorf("FindBinaries(3): %v", err)
	}
}

func TestVersionHelpers(t *testing.T) {
	t.Parallel()
	for v, want := range map[string]string{"15.18": "15", "9.6.24": "9.6", "17": "17", "10.1": "10"} {
		if got := majorOf(v); got != want {
			t.Errorf("majorOf(%q) = %q, want %q", v, got, want)
		}
	}
	if compareVersions("16", "9.6") <= 0 || compareVersions("15", "15") != 0 || compareVersions("", "1") >= 0 {
		t.Error("compareVersions orders wrongly")
	}
	if got := versionInPath("/opt/homebrew/opt/postgresql@16/bin"); got != "16" {
		t.Errorf("versionInPath = %q", got)
	}
	if got := shellQuote("a'b"); got != `'a'\''b'` {
		t.Errorf("shellQuote = %s", got)
	}
}

func TestDefaultStateDir(t *testing.T) {
	t.Setenv(StateDirEnv, "/srv/al")
	if d, err := DefaultStateDir(); err != nil || d != "/srv/al" {
		t.Errorf("with %s: %q, %v", StateDirEnv, d, err)
	}
	t.Setenv(StateDirEnv, "")
	t.Setenv("XDG_STATE_HOME", "/xdg")
	d, err := DefaultStateDir()
	want := "/xdg/agentledger"
	if os.Geteuid() == 0 {
		want = "/var/lib/agentledger"
	}
	if err != nil || d != want {
		t.Errorf("DefaultStateDir = %q, %v; want %q", d, err, want)
	}
}
