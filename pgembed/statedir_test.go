package pgembed

import (
	"os"
	"path/filepath"
	"testing"
)

// Start with MustExist refuses a state directory without a cluster and
// creates nothing there; the refusal names the usual directories that
// hold one.
func TestMustExistRefusesAnEmptyStateDir(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "typo")
	_, err := Start(t.Context(), Config{StateDir: dir, MustExist: true})
	nc, ok := err.(*NoClusterError)
	if !ok || nc.StateDir != dir {
		t.Fatalf("Start = %v, want a *NoClusterError for %s", err, dir)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the refused Start made %s (%v)", dir, err)
	}
	for e, want := range map[*NoClusterError]string{
		{StateDir: "/a"}:                               "no embedded PostgreSQL cluster in state directory /a (nor in the default state directory)",
		{StateDir: "/a", Others: []string{"/b"}}:       "no embedded PostgreSQL cluster in state directory /a; there is one in /b",
		{StateDir: "/a", Others: []string{"/b", "/c"}}: "no embedded PostgreSQL cluster in state directory /a; there are clusters in /b and /c",
	} {
		if got := e.Error(); got != want {
			t.Errorf("%+v: %q, want %q", *e, got, want)
		}
	}
}
