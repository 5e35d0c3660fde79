package main

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/agentledger/agentledger/internal/demo"
)

// printDemo tells a newcomer what the demo seeded and where to look next.
// ctl is how to run agentctl against the same database.
func printDemo(w io.Writer, s demo.Seeded, addr, ctl string) {
	var b strings.Builder
	header, fresh := "seeded", true
	for _, t := range s.Tasks {
		if !t.New {
			header, fresh = "seeded by an earlier run (nothing is seeded twice)", false
		}
	}
	fmt.Fprintf(&b, "\n  agentledger demo — %s\n\n", header)
	for _, t := range s.Tasks {
		state := "new"
		if !t.New {
			state = "already there, " + strings.ReplaceAll(string(t.State), "_", " ")
		}
		fmt.Fprintf(&b, "    task %-4d %-26s (%s)\n", t.ID, t.Name, state)
	}
	if s.RuleDisabled {
		fmt.Fprintf(&b, "    rule %q is disabled (agentctl rule enable %s posts task state changes to #%s again)\n", s.Rule, s.Rule, demo.Channel)
	} else {
		fmt.Fprintf(&b, "    rule %q posts every task state change to #%s (console: lines below)\n", s.Rule, demo.Channel)
	}
	if s.SchedulePaused {
		fmt.Fprintf(&b, "    schedule %q is paused (agentctl schedule resume %s)\n\n", s.Schedule, s.Schedule)
	} else {
		fmt.Fprintf(&b, "    schedule %q fires an echo task every minute\n\n", s.Schedule)
	}
	b.WriteString("  Look next, in another terminal:\n")
	line := func(cmd, what string) { fmt.Fprintf(&b, "    %-40s  %s\n", ctl+" "+cmd, what) }
	line("tui", "the operator console")
	if fresh {
		line("list", "tasks; one fails twice then succeeds, one needs attention, one is undone (a saga), one waits for approval")
	} else {
		line("list", "the tasks and their states now")
	}
	if len(s.Tasks) > 0 {
		id := s.Tasks[0].ID
		line(fmt.Sprintf("show %d", id), "its journal: the charge, the child task, the notification")
		line(fmt.Sprintf("replay %d --dry-run", id), "every effect would be served from the ledger")
	}
	for _, t := range s.Tasks {
		if t.Name == demo.ApprovalTask && !t.State.Finished() {
			line("approvals", fmt.Sprintf("task %d's large charge waits for a person: approve it here, or with `a` in the console", t.ID))
		}
	}
	fmt.Fprintf(&b, "    curl -s http://%s/metrics | grep effects_total\n\n", addr)
	_, _ = io.WriteString(w, b.String())
}

// agentctlLine is how the banner runs agentctl: with this daemon's state
// directory when one was chosen, so that it finds the same cluster; with
// a database URL, agentctl needs the same DATABASE_URL (not printed: it
// may hold a password).
func agentctlLine(stateDir, databaseURL string) string {
	ctl := "go run ./cmd/agentctl"
	if databaseURL == "" && stateDir != "" {
		if abs, err := filepath.Abs(stateDir); err == nil {
			stateDir = abs
		}
		ctl += " --state-dir " + shellQuote(stateDir)
	}
	return ctl
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+=:,@") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
