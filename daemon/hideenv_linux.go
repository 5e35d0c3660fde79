package daemon

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// HideEnvironment makes this process non-dumpable (prctl PR_SET_DUMPABLE
// 0), so that other processes of its user, the stdio MCP servers it starts
// among them, can no longer read its /proc/<pid>/environ (where the
// model's API key, the Slack token and the database URL may be) or its
// memory, nor attach to it with ptrace; the process leaves no core dump
// either. It still reads its own /proc/self files but the owner-only ones
// (environ, io, mem), which neither the Go runtime nor the process_*
// metrics read. Root (CAP_SYS_PTRACE) still reads everything, and a
// program the process starts is dumpable again once executed: give it only
// the environment it needs (MCPServer.Env).
//
// agentd calls it first thing. Run does not: whether a process may be
// debugged by attaching or leave a core dump is the embedding program's
// choice, for the whole process; call it before starting anything. On
// other systems it does nothing.
func HideEnvironment() error {
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("prctl(PR_SET_DUMPABLE, 0): %w", err)
	}
	return nil
}
