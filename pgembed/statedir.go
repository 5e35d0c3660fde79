package pgembed

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
)

// StateDirEnv names the environment variable that overrides DefaultStateDir.
const StateDirEnv = "AGENTLEDGER_STATE_DIR"

// DefaultStateDir returns $AGENTLEDGER_STATE_DIR if set; otherwise /var/lib/agentledger
// for root and $XDG_STATE_HOME/agentledger (or ~/.local/state/agentledger) for other users.
func DefaultStateDir() (string, error) {
	if d := os.Getenv(StateDirEnv); d != "" {
		abs, err := filepath.Abs(d)
		if err != nil {
			return "", fmt.Errorf("pgembed: %s=%q: %w", StateDirEnv, d, err)
		}
		return abs, nil
	}
	return userStateDir()
}

// userStateDir is the default state directory when $AGENTLEDGER_STATE_DIR
// is not set.
func userStateDir() (string, error) {
	if os.Geteuid() == 0 {
		return "/var/lib/agentledger", nil
	}
	if x := os.Getenv("XDG_STATE_HOME"); x != "" && filepath.IsAbs(x) {
		return filepath.Join(x, "agentledger"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("pgembed: cannot choose a state directory (set %s): %w", StateDirEnv, err)
	}
	return filepath.Join(home, ".local", "state", "agentledger"), nil
}

// HasCluster reports whether stateDir holds a cluster: a pgdata with its
// PG_VERSION, which initialisation writes last.
func HasCluster(stateDir string) bool {
	_, err := os.Stat(filepath.Join(layout{root: stateDir}.dataDir(), "PG_VERSION"))
	return err == nil
}

// OtherClusters lists the state directories a cluster is usually found in
// ($AGENTLEDGER_STATE_DIR's, the user's default) that hold one, but for
// dir: where a mistyped --state-dir probably meant.
func OtherClusters(dir string) []string {
	var out []string
	for _, f := range []func() (string, error){DefaultStateDir, userStateDir} {
		d, err := f()
		if err != nil || d == filepath.Clean(dir) || slices.Contains(out, d) || !HasCluster(d) {
			continue
		}
		out = append(out, d)
	}
	return out
}

// NoClusterError is Start's refusal, with Config.MustExist, of a state
// directory that holds no cluster.
type NoClusterError struct {
	StateDir string
	// Others are the usual state directories that hold one (OtherClusters).
	Others []string
}

func (e *NoClusterError) Error() string {
	msg := fmt.Sprintf("no embedded PostgreSQL cluster in state directory %s", e.StateDir)
	switch len(e.Others) {
	case 0:
		return msg + " (nor in the default state directory)"
	case 1:
		return msg + "; there is one in " + e.Others[0]
	}
	return msg + "; there are clusters in " + strings.Join(e.Others, " and ")
}

// layout names the files inside a state directory.
type layout struct{ root string }

func (l layout) dataDir() string    { return filepath.Join(l.root, "pgdata") }
func (l layout) initDir() string    { return filepath.Join(l.root, "pgdata.init") }
func (l layout) logDir() string     { return filepath.Join(l.root, "log") }
func (l layout) logFile() string    { return filepath.Join(l.root, "log", "postgres.log") }
func (l layout) connFile() string   { return filepath.Join(l.root, "conn.json") }
func (l layout) startLock() string  { return filepath.Join(l.root, "start.lock") }
func (l layout) usersLock() string  { return filepath.Join(l.root, "users.lock") }
func (l layout) serverLock() string { return filepath.Join(l.root, "server.lock") }
func (l layout) pidFile() string    { return filepath.Join(l.dataDir(), "postmaster.pid") }

// mkdirAllMode is os.MkdirAll that gives every directory it creates exactly
// mode perm, whatever the umask.
func mkdirAllMode(dir string, perm fs.FileMode) error {
	fi, err := os.Stat(dir)
	if err == nil {
		if !fi.IsDir() {
			return fmt.Errorf("pgembed: %s exists and is not a directory", dir)
		}
		return nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("pgembed: %w", err)
	}
	if parent := filepath.Dir(dir); parent != dir {
		if err := mkdirAllMode(parent, perm); err != nil {
			return err
		}
	}
	if err := os.Mkdir(dir, perm); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("pgembed: %w", err)
	}
	if err := os.Chmod(dir, perm); err != nil {
		return fmt.Errorf("pgembed: %w", err)
	}
	return nil
}

// checkTraversable verifies that u can search dir and every directory above it.
func checkTraversable(dir string, u *runAs) error {
	for p := dir; ; p = filepath.Dir(p) {
		fi, err := os.Stat(p)
		if err != nil {
			return fmt.Errorf("pgembed: %w", err)
		}
		if !canSearch(fi, u) {
			return fmt.Errorf("pgembed: the PostgreSQL server runs as user %q, which cannot enter %s (mode %v) "+
				"on the way to state directory %s; choose a state directory outside it, e.g. "+
				"--state-dir /var/lib/agentledger or %s=/var/lib/agentledger, or make the directory searchable (chmod o+x)",
				u.name, p, fi.Mode().Perm(), dir, StateDirEnv)
		}
		if filepath.Dir(p) == p {
			return nil
		}
	}
}

// canSearch applies the Unix permission rules for the execute bit of a directory.
func canSearch(fi fs.FileInfo, u *runAs) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return true
	}
	perm := fi.Mode().Perm()
	switch {
	case int(st.Uid) == u.uid:
		return perm&0o100 != 0
	case u.inGroup(int(st.Gid)):
		return perm&0o010 != 0
	default:
		return perm&0o001 != 0
	}
}

// ownerUID returns the uid owning path.
func ownerUID(path string) (int, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return 0, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return -1, nil
	}
	return int(st.Uid), nil
}
