package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/agentledger/agentledger/internal/demo"
)

// printDemo tells a newcomer what the demo seeded and where to look next.
func printDemo(w io.Writer, s demo.Seeded, addr string) {
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
	fmt.Fprintf(&b, "    rule %q posts every task state change to #%s (console: lines below)\n", s.Rule, demo.Channel)
	fmt.Fprintf(&b, "    schedule %q fires an echo task every minute\n\n", s.Schedule)
	b.WriteString("  Look next, in another terminal:\n")
	b.WriteString("    go run ./cmd/agentctl tui                 the operator console\n")
	if fresh {
		b.WriteString("    go run ./cmd/agentctl list                tasks; one fails twice then succeeds, one needs attention\n")
	} else {
		b.WriteString("    go run ./cmd/agentctl list                the tasks and their states now\n")
	}
	if len(s.Tasks) > 0 {
		id := s.Tasks[0].ID
		fmt.Fprintf(&b, "    go run ./cmd/agentctl show %d              its journal: the charge, the child task, the notification\n", id)
		fmt.Fprintf(&b, "    go run ./cmd/agentctl replay %d --dry-run  every effect would be served from the ledger\n", id)
	}
	fmt.Fprintf(&b, "    curl -s http://%s/metrics | grep effects_total\n\n", addr)
	_, _ = io.WriteString(w, b.String())
}
