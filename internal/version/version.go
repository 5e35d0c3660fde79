// Package version says which build a binary is, for --version.
package version

import (
	"runtime/debug"
	"strings"
)

// String is the module version (or "devel") with the VCS revision and
// whether the tree was modified, as the Go toolchain recorded them.
func String() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	v := bi.Main.Version
	if v == "" || v == "(devel)" {
		v = "devel"
	}
	var rev, dirty string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "+dirty"
			}
		}
	}
	parts := []string{v}
	if rev != "" {
		parts = append(parts, rev[:min(12, len(rev))]+dirty)
	}
	return strings.Join(append(parts, bi.GoVersion), " ")
}
