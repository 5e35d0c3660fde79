package pgembed

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// ErrNoBinaries is wrapped by the error Start returns when initdb or pg_ctl cannot be found.
var ErrNoBinaries = errors.New("pgembed: PostgreSQL server binaries not found")

// searchGlobs lists the distribution locations searched after PATH, in order;
// tests replace it to simulate a machine without PostgreSQL.
var searchGlobs = []string{
	"/usr/lib/postgresql/*/bin",
	"/usr/pgsql-*/bin",
	"/usr/local/pgsql/bin",
	"/opt/homebrew/opt/postgresql@*/bin",
	"/usr/local/opt/postgresql@*/bin",
}

const installHint = "install the PostgreSQL server (Debian/Ubuntu: apt-get install postgresql; " +
	"Fedora: dnf install postgresql-server; macOS: brew install postgresql@16), " +
	"or set DATABASE_URL to use an existing PostgreSQL server instead"

// FindBinaries returns the directory holding initdb, pg_ctl and postgres,
// of major version pgVersion (e.g. "15"), or of the newest version found when pgVersion is empty.
func FindBinaries(pgVersion string) (binDir string, err error) {
	dir, _, err := findBinaries(pgVersion)
	return dir, err
}

// findBinaries is FindBinaries that also returns the full version reported by pg_ctl.
func findBinaries(want string) (dir, version string, err error) {
	var others []string
	for _, d := range candidateDirs() {
		if !hasServerBinaries(d) {
			continue
		}
		v, err := pgCtlVersion(d)
		if err != nil {
			continue
		}
		if want == "" || majorOf(v) == want {
			return d, v, nil
		}
		others = append(others, fmt.Sprintf("%s in %s", v, d))
	}
	where := "on PATH or in " + strings.Join(searchGlobs, ", ")
	if len(searchGlobs) == 0 {
		where = "on PATH"
	}
	if want != "" {
		found := "none"
		if len(others) > 0 {
			found = strings.Join(others, "; ")
		}
		return "", "", fmt.Errorf("%w: PostgreSQL %s is needed (a data directory only works with the major version that created it), "+
			"but no PostgreSQL %s server binaries (initdb, pg_ctl, postgres) were found %s (other versions found: %s); "+
			"install PostgreSQL %s server binaries, or set DATABASE_URL to use an existing PostgreSQL server instead",
			ErrNoBinaries, want, want, where, found, want)
	}
	return "", "", fmt.Errorf("%w: looked for initdb and pg_ctl %s; %s", ErrNoBinaries, where, installHint)
}

// candidateDirs lists directories that may hold the server binaries, best first.
func candidateDirs() []string {
	var dirs []string
	for _, name := range []string{"pg_ctl", "initdb"} {
		p, err := exec.LookPath(name)
		if err != nil {
			continue
		}
		if real, err := filepath.EvalSymlinks(p); err == nil {
			p = real
		}
		if abs, err := filepath.Abs(p); err == nil {
			dirs = append(dirs, filepath.Dir(abs))
		}
	}
	for _, g := range searchGlobs {
		matches, _ := filepath.Glob(g)
		slices.SortStableFunc(matches, func(a, b string) int {
			return compareVersions(versionInPath(b), versionInPath(a))
		})
		dirs = append(dirs, matches...)
	}
	var out []string
	seen := map[string]bool{}
	for _, d := range dirs {
		if !seen[d] {
			seen[d] = true
			out = append(out, d)
		}
	}
	return out
}

// hasServerBinaries reports whether dir holds executable initdb, pg_ctl and postgres.
func hasServerBinaries(dir string) bool {
	for _, name := range []string{"initdb", "pg_ctl", "postgres"} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
			return false
		}
	}
	return true
}

var (
	versionOutputRE = regexp.MustCompile(`\(PostgreSQL\)\s+(\d+(?:\.\d+)*)`)
	versionInPathRE = regexp.MustCompile(`\d+(?:\.\d+)*`)
)

// pgCtlVersion runs "pg_ctl --version" in dir and returns the version, e.g. "15.18".
func pgCtlVersion(dir string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, filepath.Join(dir, "pg_ctl"), "--version").Output()
	if err != nil {
		return "", err
	}
	m := versionOutputRE.FindSubmatch(out)
	if m == nil {
		return "", fmt.Errorf("unrecognised pg_ctl --version output %q", strings.TrimSpace(string(out)))
	}
	return string(m[1]), nil
}

// majorOf returns the major version as PG_VERSION spells it: "15" for 15.4, "9.6" for 9.6.24.
func majorOf(v string) string {
	parts := strings.Split(v, ".")
	if n, err := strconv.Atoi(parts[0]); err == nil && n < 10 && len(parts) > 1 {
		return parts[0] + "." + parts[1]
	}
	return parts[0]
}

// versionInPath returns the last version-looking number in a path, or "".
func versionInPath(p string) string {
	all := versionInPathRE.FindAllString(p, -1)
	if len(all) == 0 {
		return ""
	}
	return all[len(all)-1]
}

// compareVersions compares dotted numeric versions; "" sorts lowest.
func compareVersions(a, b string) int {
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < max(len(as), len(bs)); i++ {
		var x, y int = -1, -1
		if i < len(as) {
			if n, err := strconv.Atoi(as[i]); err == nil {
				x = n
			}
		}
		if i < len(bs) {
			if n, err := strconv.Atoi(bs[i]); err == nil {
				y = n
			}
		}
		if x != y {
			if x < y {
				return -1
			}
			return 1
		}
	}
	return 0
}
