package pgembed

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// pidInfo is what postmaster.pid says about a server.
type pidInfo struct {
	pid    int
	port   int    // 0 if unknown
	status string // "starting", "ready", "stopping", ... or ""
}

// readPidFile parses postmaster.pid; exists is false when there is none.
func readPidFile(path string) (pi pidInfo, exists bool, err error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return pi, false, nil
	}
	if err != nil {
		return pi, true, err
	}
	lines := strings.Split(string(b), "\n")
	pi.pid, err = strconv.Atoi(strings.TrimSpace(lines[0]))
	if err != nil || pi.pid <= 0 {
		return pi, true, fmt.Errorf("no pid on the first line")
	}
	if len(lines) > 3 {
		pi.port, _ = strconv.Atoi(strings.TrimSpace(lines[3]))
	}
	if len(lines) > 7 {
		pi.status = strings.TrimSpace(lines[7])
	}
	return pi, true, nil
}

// processAlive reports whether a process with this pid exists.
func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// isOurPostmaster reports whether pid is a live postgres process serving dataDir.
// Pids are reused (after a reboot or container restart a pid file can name any
// process), so being alive is not enough.
func isOurPostmaster(pid int, dataDir string) bool {
	if !processAlive(pid) {
		return false
	}
	proc := fmt.Sprintf("/proc/%d", pid)
	raw, err := os.ReadFile(proc + "/cmdline")
	if err != nil {
		if _, serr := os.Stat("/proc/self/cmdline"); serr != nil {
			// No procfs (macOS): alive is all we can tell; Start verifies by connecting.
			return true
		}
		return false
	}
	args := strings.Split(strings.TrimRight(string(raw), "\x00"), "\x00")
	isPostgres := len(args) > 0 && isPostgresName(args[0])
	if exe, err := os.Readlink(proc + "/exe"); err == nil && isPostgresName(strings.TrimSuffix(exe, " (deleted)")) {
		isPostgres = true
	}
	if !isPostgres {
		return false
	}
	for _, a := range args {
		if filepath.Clean(a) == dataDir {
			return true
		}
	}
	// The postmaster runs with the data directory as its working directory.
	cwd, err := os.Readlink(proc + "/cwd")
	if err != nil {
		return false
	}
	real, err := filepath.EvalSymlinks(dataDir)
	return err == nil && cwd == real
}

// isPostgresName reports whether a program path names the postgres server.
func isPostgresName(p string) bool {
	b := filepath.Base(p)
	return b == "postgres" || b == "postmaster"
}
