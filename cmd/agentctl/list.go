package main

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/registry"
	"github.com/agentledger/agentledger/render"
)

// maxListLimit is the most tasks one list call returns (claims.List's cap).
const maxListLimit = 1000

// listFlags are the options of agentctl list as given.
type listFlags struct {
	tenant, queue, kind string
	states              []string
	limit               int
	before              int64
	timeRange
}

func (a *app) listCmd() *cobra.Command {
	var f listFlags
	cmd := &cobra.Command{
		Use:   "list [flags]",
		Short: "List tasks, newest first",
		Long: `List tasks newest first, filtered by state, queue, kind, tenant and creation
time: --since and --until take RFC 3339 times, dates (2026-01-02, midnight
local time) or durations meaning that long ago (30m, 2h, 7d).

The WHEN column says when a waiting task runs ("runs in 5m") or since when it
has been due ("due 3s ago"), and for any other task when it last changed
("updated 2m ago"). DETAIL is the last error, what a task waits for, or that
a running task's lease expired (its worker died or stalled). When a page is
full, the flag for the next one is printed to stderr.`,
		Example: `  agentctl list --state queued,running
  agentctl list --state dead --queue emails --output json
  agentctl list --tenant acme --since 2h
  agentctl list --since 2026-01-01 --until 2026-01-02T12:00:00Z
  agentctl list --limit 20 --before 1234`,
		Args: cobra.NoArgs,
		RunE: a.action(func(ctx context.Context, _ []string) error { return a.list(ctx, &f) }),
	}
	fl := cmd.Flags()
	fl.StringSliceVar(&f.states, "state", nil, "only tasks in these states (repeat or comma-separate): "+stateNames())
	fl.StringVar(&f.queue, "queue", "", "only tasks of this queue")
	fl.StringVar(&f.kind, "kind", "", "only tasks of this kind")
	tenantFlag(cmd, &f.tenant, "only tasks of this tenant (default all)")
	fl.IntVar(&f.limit, "limit", 50, "at most this many tasks (1.."+strconv.Itoa(maxListLimit)+")")
	fl.Int64Var(&f.before, "before", 0, "only tasks with an id below this one (the next page)")
	timeRangeFlags(cmd, &f.timeRange, "")
	_ = cmd.RegisterFlagCompletionFunc("state", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return strings.Split(stateNames(), ", "), cobra.ShellCompDirectiveNoFileComp
	})
	return cmd
}

// stateNames lists the task states, comma-separated.
func stateNames() string {
	names := make([]string, len(agentledger.TaskStates))
	for i, s := range agentledger.TaskStates {
		names[i] = string(s)
	}
	return strings.Join(names, ", ")
}

// params checks the flags and turns them into list parameters; --since
// and --until are read against now.
func (f *listFlags) params(now time.Time) (claims.ListParams, error) {
	p := claims.ListParams{Tenant: f.tenant, Queue: f.queue, Kind: f.kind, Before: f.before, Limit: f.limit}
	for _, s := range f.states {
		st := agentledger.TaskState(strings.TrimSpace(s))
		if !st.Valid() {
			return p, usagef("unknown state %q: valid states are %s", s, stateNames())
		}
		p.States = append(p.States, st)
	}
	if f.limit < 1 || f.limit > maxListLimit {
		return p, usagef("--limit must be between 1 and %d, not %d", maxListLimit, f.limit)
	}
	if f.before < 0 {
		return p, usagef("--before must be a task id, not %d", f.before)
	}
	return p, f.timeRange.apply(&p, now)
}

func (a *app) list(ctx context.Context, f *listFlags) error {
	p, err := f.params(time.Now())
	if err != nil {
		return err
	}
	s, err := a.store(ctx)
	if err != nil {
		return err
	}
	tasks, err := s.List(ctx, p)
	if err != nil {
		return err
	}
	if err := registry.New(a.db.Pool).ExplainWaits(ctx, tasks...); err != nil {
		return err
	}
	if a.wantJSON() {
		if tasks == nil {
			tasks = []*agentledger.Task{}
		}
		return printJSON(a.stdout, tasks)
	}
	if a.output == "id" {
		for _, t := range tasks {
			fmt.Fprintln(a.stdout, t.ID)
		}
		return nil
	}
	if len(tasks) == 0 {
		_, err := fmt.Fprintln(a.stderr, "no tasks")
		return err
	}
	now := time.Now()
	t := newTable(a.stdout, "ID", "TENANT", "QUEUE", "KIND", "STATE", "ATTEMPT", "WHEN", "DETAIL")
	for _, task := range tasks {
		t.row(strconv.FormatInt(task.ID, 10), task.Tenant, task.Queue, task.Kind, string(task.State),
			render.Tries(task), when(task, now), truncate(orDash(lastError(task, now)), lastErrorWidth(task)))
	}
	if err := t.flush(); err != nil {
		return err
	}
	if len(tasks) == p.Limit {
		fmt.Fprintf(a.stderr, "more tasks may follow: add --before %d\n", tasks[len(tasks)-1].ID)
	}
	return nil
}

// unknownAt finds the ledger's "effect KEY at STEP: " in an error.
var unknownAt = regexp.MustCompile(`effect [0-9a-f]+ at (\S+): `)

// lastError is a task's last error for the list, whose column is cut: a
// task waiting for an operator names the step to resolve first, where its
// error names it after a ledger key and more; a task waiting to be claimed
// says what it waits for ("waiting for a daemon with tool open_ticket"),
// and a running task whose lease expired (its worker died or stalled)
// says so, as show does.
func lastError(t *agentledger.Task, now time.Time) string {
	if w := render.Waiting(t); w != "" {
		return w // what it waits for says more than the error before it
	}
	if l := render.LeaseOf(t, now); l.Expired {
		return "lease " + l.Expiry + ": claimable again" // show says more
	}
	m := unknownAt.FindStringSubmatchIndex(t.LastError)
	if t.State != agentledger.StateNeedsAttention || m == nil {
		return render.BriefError(t.LastError)
	}
	return render.BriefError("at " + t.LastError[m[2]:m[3]] + ": " + t.LastError[:m[0]] + t.LastError[m[1]:])
}

// lastErrorWidth is how much of lastError the list shows: 50 runes of an
// error (show has it whole), 80 of what a task waits for, whose end (an
// origin, a tool's name) is what tells two waits apart.
func lastErrorWidth(t *agentledger.Task) int {
	if render.Waiting(t) != "" {
		return 80
	}
	return 50
}

// when describes a task's time for the list: when a waiting task runs, or
// when any other task last changed.
func when(t *agentledger.Task, now time.Time) string {
	switch t.State {
	case agentledger.StateWaiting:
		return "deadline " + relative(t.RunAt, now) // woken before by what it waits for, else then
	case agentledger.StateQueued, agentledger.StateRetrying:
		if t.RunAt.After(now) {
			return "runs " + relative(t.RunAt, now)
		}
		return "due " + relative(t.RunAt, now)
	}
	return "updated " + relative(t.UpdatedAt, now)
}
