package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/term"
	"github.com/spf13/cobra"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/tui"
)

func (a *app) tuiCmd() *cobra.Command {
	var (
		f          tui.Filter
		state      string
		poll       time.Duration
		page       int
		staleAfter time.Duration
	)
	cmd := &cobra.Command{
		Use:   "tui",
		Short: "The operator console: live tasks, journals, replays, approvals, waits, workers",
		Long: `tui opens the operator console in the terminal. It lists tasks live, page by
page (n/p), filtered by state (s cycles it; f opens a form of state, queue,
kind and tenant that lists the values each takes; F clears every filter),
searched (/) and sorted (o) over the loaded page, with the count of tasks
per state. Enter opens a task: its overview, attempts, journal of effects
(enter expands one) and notifications.

a lists the requests waiting for approval: y previews one's call and
approves it (r adds a reason), d denies it with a reason. W lists the
waits of tasks waiting for a signal, a timer or their children, the
soonest deadline first: s sends a signal wait its signal (p gives its JSON
payload, {} by default; y alone sends it), e ends a wait with a reason. A
waiting task's page says when it wakes, and s and e act there too.

Actions ask for confirmation first: replay (r) shows which effects the
ledger serves and which run; re-run as a new intent (R) runs every effect
again; cancel (c); retry a dead task (t); undo a task's completed effects
(u) shows the call each undo sends; resolve an effect of unknown
outcome (v, in a task) as done or allowed one retry, with a note; redeliver
a task's failed notifications (N) shows what each sends again (post,
update, or look up first), as agentctl notifications redeliver does; retry
all dead (T) or cancel all (X) tasks of the filter, after showing their
count. A re-run, an undo and the bulk actions take y only, not enter. A
task's footer offers the actions its state allows. w shows the workers and
their leases, L the limits, their circuit breakers and the targets booked
lately, ? every key, q quits. The console draws at once and keeps the keys
typed while the database opens.`,
		Example: `  agentctl tui
  agentctl tui --state dead --queue billing`,
		Args: cobra.NoArgs,
		RunE: a.action(func(ctx context.Context, _ []string) error {
			if state != "" {
				f.State = agentledger.TaskState(strings.TrimSpace(state))
				if !f.State.Valid() {
					return usagef("unknown state %q: valid states are %s", state, stateNames())
				}
			}
			if page < 1 || page > maxListLimit {
				return usagef("--page-size must be between 1 and %d, not %d", maxListLimit, page)
			}
			if staleAfter <= 0 {
				return usagef("--stale-after must be positive, not %s", staleAfter)
			}
			return a.tui(ctx, tui.Options{Filter: f, Poll: poll, PageSize: page, StaleAfter: staleAfter})
		}),
	}
	fl := cmd.Flags()
	fl.StringVar(&state, "state", "", "start filtered on this state: "+stateNames())
	fl.StringVar(&f.Queue, "queue", "", "start filtered on this queue")
	fl.StringVar(&f.Kind, "kind", "", "start filtered on this kind")
	tenantFlag(cmd, &f.Tenant, "start filtered on this tenant (actions apply to any tenant's tasks)")
	fl.DurationVar(&poll, "refresh", tui.DefaultPoll, "how often the screen reloads; 0 or less: never")
	fl.IntVar(&page, "page-size", tui.DefaultPageSize, "tasks loaded per page")
	fl.DurationVar(&staleAfter, "stale-after", defaultStaleAfter,
		"the workers view marks a worker STALE once its heartbeat is older than this, as agentctl workers does")
	return cmd
}

// tui runs the console on the terminal until the operator quits.
func (a *app) tui(ctx context.Context, opts tui.Options) error {
	in, inOK := a.stdin.(*os.File)
	out, outOK := a.stdout.(*os.File)
	if !inOK || !outOK || !term.IsTerminal(in.Fd()) || !term.IsTerminal(out.Fd()) {
		return usagef("agentctl tui needs a terminal; use agentctl list and show in scripts")
	}
	if opts.Poll <= 0 {
		opts.Poll = -1
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// The database opens under the console's "connecting…" screen (an
	// embedded cluster takes seconds). The warnings of the libraries wait
	// in warnings until the terminal is back: written meanwhile, they
	// would land across the screen.
	warnings := &heldWriter{to: a.stderr}
	a.stderr = warnings
	defer warnings.release()
	open := func(ctx context.Context) (tui.Store, error) {
		if _, err := a.store(ctx); err != nil {
			return nil, err
		}
		return tui.NewDBStore(a.db.Pool), nil
	}
	p := tea.NewProgram(tui.Connect(ctx, open, opts), tea.WithAltScreen(), tea.WithContext(ctx), tea.WithInput(in), tea.WithOutput(out))
	final, err := p.Run()
	if errors.Is(err, tea.ErrInterrupted) || (errors.Is(err, tea.ErrProgramKilled) && ctx.Err() != nil) {
		return nil // a signal ended agentctl; the terminal is restored
	}
	if c, ok := final.(tui.Connecting); ok && c.Err() != nil {
		return c.Err()
	}
	return err
}

// heldWriter holds what the database's goroutines write while the
// console runs; once released it writes that to its destination, and
// from then on writes straight through.
type heldWriter struct {
	mu       sync.Mutex
	to       io.Writer
	held     bytes.Buffer
	released bool
}

func (w *heldWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.released {
		return w.to.Write(p)
	}
	return w.held.Write(p)
}

// release writes what was held.
func (w *heldWriter) release() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.released = true
	_, _ = w.held.WriteTo(w.to)
}
