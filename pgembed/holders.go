package pgembed

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// holders names the other processes that hold a flock on f — on Linux,
// read from /proc/locks by the file's device and inode — as "agentctl (pid
// 4242)", sorted by pid. It returns nil when they cannot be read (another
// system, a restricted /proc): the caller then says "other processes".
func holders(f *os.File) []string {
	var st syscall.Stat_t
	if err := syscall.Fstat(int(f.Fd()), &st); err != nil {
		return nil
	}
	locks, err := os.Open("/proc/locks")
	if err != nil {
		return nil
	}
	defer locks.Close()
	pids := lockHolders(bufio.NewScanner(locks), st.Ino, os.Getpid())
	out := make([]string, 0, len(pids))
	for _, pid := range pids {
		name := "process"
		if comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid)); err == nil {
			name = strings.TrimSpace(string(comm))
		}
		out = append(out, fmt.Sprintf("%s (pid %d)", name, pid))
	}
	return out
}

// lockHolders returns, in order and once each, the pids that /proc/locks
// (read by lines) shows holding a FLOCK on inode, other than self. Waiters
// ("-> ") hold nothing yet.
func lockHolders(lines *bufio.Scanner, inode uint64, self int) []int {
	var pids []int
	seen := map[int]bool{}
	for lines.Scan() {
		f := strings.Fields(lines.Text())
		// "1: FLOCK  ADVISORY  READ  4242 08:01:131090 0 EOF"
		if len(f) < 6 || f[1] != "FLOCK" {
			continue
		}
		dev := strings.Split(f[5], ":")
		ino, err := strconv.ParseUint(dev[len(dev)-1], 10, 64)
		if err != nil || ino != inode {
			continue
		}
		pid, err := strconv.Atoi(f[4])
		if err != nil || pid == self || seen[pid] {
			continue
		}
		seen[pid] = true
		pids = append(pids, pid)
	}
	return pids
}
