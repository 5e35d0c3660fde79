package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/admit"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/grants"
	"github.com/agentledger/agentledger/schedule"
)

func (a *app) scheduleCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "schedule add|list|pause|resume|rm",
		Short: "Manage cron schedules",
		Long: `A schedule enqueues one task at every slot of its cron spec, read in its
time zone. The schedules live in the database and every agentd fires them:
however many daemons run, each slot becomes exactly one task, with the
submission key cron:<name>:<slot in RFC 3339, UTC>.

Slots missed while no daemon ran follow the schedule's --missed policy: the
latest due slot still fires if it is at most a minute late; the others are
skipped (skip, the default) or made up by one catch-up task for the most
recent of them (run-once).`,
		Args: cobra.NoArgs,
		RunE: a.action(func(context.Context, []string) error {
			return usagef("schedule needs a subcommand: add, list, pause, resume or rm")
		}),
	}
	cmd.AddCommand(a.scheduleAddCmd(), a.scheduleListCmd(), a.schedulePauseCmd(), a.scheduleResumeCmd(),
		a.scheduleRmCmd())
	return cmd
}

// scheduleFlags are the options of agentctl schedule add as given.
type scheduleFlags struct {
	spec, timezone, missed string
	tenant, queue, kind    string
	payload                payloadSpec
	priority               int16
	maxAttempts            int32
}

func (a *app) scheduleAddCmd() *cobra.Command {
	var f scheduleFlags
	cmd := &cobra.Command{
		Use:   "add NAME --spec SPEC --kind KIND [flags]",
		Short: "Add a cron schedule",
		Long: `Add a schedule that enqueues a task of --kind with --payload at every slot of
--spec, read in --timezone. Its first slot is the first after now.

SPEC has five fields (minute hour day-of-month month day-of-week), six with
seconds first, or is a descriptor: @hourly, @daily, @weekly, @monthly,
@yearly, or @every DURATION (at least 1s, at most five years). A spec
with no slot in the next five years is refused. Across a daylight-saving
change in --timezone, a local time that does not exist that day has no
slot and one that occurs twice has two: a daily schedule in the hour that
moves fires not at all, or twice, that day (use UTC, or another hour,
where that matters).

--missed says what happens to slots that passed while no daemon ran: the
latest due slot still fires if it is at most a minute late; every other one
is skipped (skip), or the most recent of them gets one catch-up task
(run-once).

A payload its tasks would fail with is refused. When no live worker serves
its kind on its queue (or its steps' tools), or the tenant's grant lacks
what its payload names, the schedule is still added and a warning says so:
its tasks are queued at each slot and wait for a worker, as agentctl
submit --allow-unserved queues them. The daemon that fires a slot holds
the task to its own settings: a URL its allow-list lacks, or a max_steps
above its --llm-max-steps, gets no task at that slot (agentd logs
"schedule: slot not fired" with why).

NAME is 1-63 characters of a-z, 0-9, '_', '.' and '-', starting with a letter
or digit. A name already taken is refused (exit 1).

With --output json it prints the schedule.`,
		Example: `  agentctl schedule add nightly-report --spec '0 2 * * *' --timezone Europe/Paris --kind report
  agentctl schedule add heartbeat --spec '@every 30s' --kind noop
  agentctl schedule add billing --spec '0 * * * *' --kind steps --payload @billing.json --missed run-once`,
		Args: oneScheduleName,
		RunE: a.action(func(ctx context.Context, args []string) error { return a.scheduleAdd(ctx, args[0], &f) }),
	}
	fl := cmd.Flags()
	fl.StringVar(&f.spec, "spec", "", "cron spec: 5 fields, 6 with seconds first, or @hourly, @daily, @every 10m (required)")
	fl.StringVar(&f.kind, "kind", "", "kind of the tasks it enqueues (required)")
	fl.Var(&f.payload, "payload", "JSON payload of its tasks, @file to read it from a file, or - for standard input (default {})")
	fl.StringVar(&f.timezone, "timezone", schedule.DefaultTimezone, "IANA time zone the spec is read in, e.g. Europe/Paris")
	fl.StringVar(&f.missed, "missed", string(schedule.DefaultMissed), "missed slots: skip, or run-once (one catch-up task)")
	fl.StringVar(&f.queue, "queue", "", `queue of its tasks (default "`+claims.DefaultQueue+`")`)
	tenantFlag(cmd, &f.tenant, `tenant of its tasks (default "`+claims.DefaultTenant+`")`)
	fl.Int16Var(&f.priority, "priority", 0, "priority of its tasks 0..100, lower runs first")
	fl.Int32Var(&f.maxAttempts, "max-attempts", claims.DefaultMaxAttempts, "attempts before a task is dead-lettered")
	_ = cmd.MarkFlagRequired("spec")
	_ = cmd.MarkFlagRequired("kind")
	_ = cmd.RegisterFlagCompletionFunc("missed", cobra.FixedCompletions(
		[]string{string(schedule.MissedSkip), string(schedule.MissedRunOnce)}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

func (a *app) scheduleListCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List the cron schedules",
		Long: `List the schedules by name, with their next and last fire (the slot of the
latest task enqueued). A paused schedule has no next fire.

With --output json it prints an array of schedules.`,
		Args: cobra.NoArgs,
		RunE: a.action(func(ctx context.Context, _ []string) error { return a.scheduleList(ctx) }),
	}
}

func (a *app) schedulePauseCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "pause NAME",
		Short: "Pause a cron schedule",
		Long: `Pause a schedule: it enqueues nothing until resumed. Tasks it already
enqueued are not touched.`,
		Args: oneScheduleName,
		RunE: a.action(func(ctx context.Context, args []string) error { return a.schedulePause(ctx, args[0]) }),
	}
}

func (a *app) scheduleResumeCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "resume NAME",
		Short: "Resume a paused cron schedule",
		Long: `Resume a paused schedule from now: its next fire is its first slot after now.
The slots that passed while it was paused are never fired, whatever its
--missed policy.`,
		Args: oneScheduleName,
		RunE: a.action(func(ctx context.Context, args []string) error { return a.scheduleResume(ctx, args[0]) }),
	}
}

func (a *app) scheduleRmCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "rm NAME",
		Aliases: []string{"remove"},
		Short:   "Remove a cron schedule",
		Long:    `Remove a schedule. Tasks it already enqueued are not touched.`,
		Args:    oneScheduleName,
		RunE:    a.action(func(ctx context.Context, args []string) error { return a.scheduleRemove(ctx, args[0]) }),
	}
}

// oneScheduleName accepts exactly one argument, a schedule name.
func oneScheduleName(cmd *cobra.Command, args []string) error {
	if len(args) != 1 {
		return usagef("%s takes one schedule name, got %d arguments", commandName(cmd), len(args))
	}
	return nil
}

// schedules opens the database, checks that its schema is migrated and
// returns the schedules in it.
func (a *app) schedules(ctx context.Context) (*schedule.Store, error) {
	db, err := a.open(ctx)
	if err != nil {
		return nil, err
	}
	if err := a.checkSchema(ctx, db); err != nil {
		return nil, err
	}
	return schedule.NewStore(db.Pool), nil
}

// scheduleView is a schedule as agentctl prints it in JSON.
type scheduleView struct {
	Name        string          `json:"name"`
	Tenant      string          `json:"tenant"`
	Spec        string          `json:"spec"`
	Timezone    string          `json:"timezone"`
	Queue       string          `json:"queue"`
	Kind        string          `json:"kind"`
	Payload     json.RawMessage `json:"payload"`
	Priority    int16           `json:"priority"`
	MaxAttempts int32           `json:"max_attempts"`
	Missed      string          `json:"missed"`
	Enabled     bool            `json:"enabled"`
	NextFireAt  *time.Time      `json:"next_fire_at"`
	LastFireAt  *time.Time      `json:"last_fire_at"`
	CreatedAt   time.Time       `json:"created_at"`
	UpdatedAt   time.Time       `json:"updated_at"`
}

func viewSchedule(s schedule.Schedule) scheduleView {
	return scheduleView{Name: s.Name, Tenant: s.Tenant, Spec: s.Spec, Timezone: s.Timezone, Queue: s.Queue,
		Kind: s.Kind, Payload: s.Payload, Priority: s.Priority, MaxAttempts: s.MaxAttempts, Missed: string(s.Missed),
		Enabled: !s.Paused, NextFireAt: s.NextFireAt, LastFireAt: s.LastFireAt, CreatedAt: s.CreatedAt, UpdatedAt: s.UpdatedAt}
}

// scheduleFlagName returns the option that sets a schedule field, named as
// in its validation errors.
func scheduleFlagName(field string) string {
	switch field {
	case "name":
		return "schedule name"
	case "max_attempts":
		return "--max-attempts"
	}
	return "--" + field
}

// schedule checks the flags and turns them into a schedule. Every error
// matches agentledger.ErrInvalid and names the flag (or the argument) at
// fault.
func (f *scheduleFlags) schedule(name string, stdin io.Reader) (schedule.Schedule, error) {
	if f.maxAttempts == 0 { // the flag defaults to 25: 0 was given, and would silently mean the default
		return schedule.Schedule{}, agentledger.Invalid("--max-attempts", "0 is outside 1..1000")
	}
	payload, err := readPayload(string(f.payload), stdin)
	if err != nil {
		return schedule.Schedule{}, err
	}
	s := schedule.Schedule{Name: name, Tenant: f.tenant, Spec: f.spec, Timezone: f.timezone, Queue: f.queue,
		Kind: f.kind, Payload: payload, Priority: f.priority, MaxAttempts: f.maxAttempts, Missed: schedule.Missed(f.missed)}
	if err := s.Validate(); err != nil {
		var ie *agentledger.InvalidError
		if errors.As(err, &ie) {
			return s, agentledger.Invalid(scheduleFlagName(ie.Field), "%s", ie.Problem)
		}
		return s, err
	}
	return s, nil
}

func (a *app) scheduleAdd(ctx context.Context, name string, f *scheduleFlags) error {
	s, err := f.schedule(name, a.stdin)
	if err != nil {
		return err
	}
	store, err := a.schedules(ctx)
	if err != nil {
		return err
	}
	got, err := store.Add(ctx, s)
	var ie *agentledger.InvalidError
	if errors.As(err, &ie) && ie.Field != "" {
		// The door's refusal of the schedule's task names its field
		// ("payload"), as f.schedule's do: say the flag the user gave.
		return agentledger.Invalid(scheduleFlagName(ie.Field), "%s", ie.Problem)
	}
	if errors.Is(err, agentledger.ErrConflict) {
		return withHint(newError(fmt.Sprintf("schedule %q already exists", name), err),
			fmt.Sprintf("choose another name, or remove it first (agentctl schedule rm %s); agentctl schedule list shows the schedules", name))
	}
	if err != nil {
		return err
	}
	a.warnUnrunnable(ctx, got) // a.schedules opened a.db
	if a.wantJSON() {
		return printJSON(a.stdout, viewSchedule(got))
	}
	_, err = fmt.Fprintf(a.stdout, "schedule %s added: %q in %s enqueues %s tasks on queue %s (missed slots: %s); next fire %s\n",
		got.Name, got.Spec, got.Timezone, got.Kind, got.Queue, got.Missed, nextFire(got, time.Now()))
	return err
}

// warnUnrunnable says on stderr why schedule s's tasks would not run if
// one were queued now: no live worker serves its kind on its queue, or
// its steps' tools (what agentctl submit refuses without
// --allow-unserved), or the tenant's grant lacks what its payload names.
// A slot is queued regardless, as cron must not lose one to a daemon
// being down, and waits; a schedule added before its daemons start is
// normal, hence a warning. But the daemon that fires a slot admits its
// task through its own door, which holds its allow-lists and its
// --llm-max-steps: a payload they refuse gets no task at that slot, only
// an error in that daemon's log, so a payload's warning says so. A look
// that fails says nothing.
func (a *app) warnUnrunnable(ctx context.Context, s schedule.Schedule) {
	p := s.Task()
	_, err := (&admit.Door{}).Admit(ctx, a.db.Pool, admit.Submission{Caller: admit.Operator, Params: p})
	var ie *agentledger.InvalidError
	if errors.As(err, &ie) {
		fate := "its tasks wait at each slot until a worker that can run them is up"
		if ie.Field == "payload" {
			fate += `; a daemon whose own settings refuse them (a URL its allow-list lacks, a max_steps above its ` +
				`--llm-max-steps) fires no task at a slot, and logs "schedule: slot not fired" with why`
		}
		fmt.Fprintf(a.stderr, "agentctl: warning: schedule %s: %s: %s: %s\n", s.Name, scheduleFlagName(ie.Field), ie.Problem, fate)
	}
	// Known as tenant grant knows a tenant: by its row, or by a grant of its own.
	if _, err := a.knownTenant(ctx, a.db, p.Tenant); errors.Is(err, agentledger.ErrNotFound) {
		fmt.Fprintf(a.stderr, "agentctl: warning: schedule %s: tenant %s is not known: its tasks run as a tenant agentctl tenant list does not show (agentctl tenant add %s first, or mind the name)\n",
			s.Name, grants.ShellQuote(p.Tenant), grants.ShellQuote(p.Tenant))
	}
	g, err := grants.NewStore(a.db.Pool).For(ctx, p.Tenant)
	if err != nil {
		return
	}
	if lack := admit.Lacks(g, p, ""); lack != nil {
		fmt.Fprintf(a.stderr, "agentctl: warning: schedule %s: its tasks' %v: the call is refused when a task runs unless the grant allows it by then\n", s.Name, lack)
	}
}

// nextFire describes a schedule's next fire for people.
func nextFire(s schedule.Schedule, now time.Time) string {
	if s.NextFireAt == nil {
		return "-"
	}
	return stamp(*s.NextFireAt) + " (" + relative(*s.NextFireAt, now) + ")"
}

func (a *app) scheduleList(ctx context.Context) error {
	store, err := a.schedules(ctx)
	if err != nil {
		return err
	}
	ss, err := store.List(ctx)
	if err != nil {
		return err
	}
	if a.wantJSON() {
		out := make([]scheduleView, len(ss))
		for i, s := range ss {
			out[i] = viewSchedule(s)
		}
		return printJSON(a.stdout, out)
	}
	if len(ss) == 0 {
		_, err := fmt.Fprintln(a.stderr, "no schedules")
		return err
	}
	now := time.Now()
	t := newTable(a.stdout, "NAME", "SPEC", "TZ", "TENANT", "KIND", "QUEUE", "MISSED", "ENABLED", "NEXT FIRE", "LAST FIRE")
	for _, s := range ss {
		enabled := "yes"
		if s.Paused {
			enabled = "no"
		}
		t.row(s.Name, s.Spec, s.Timezone, cmp.Or(s.Tenant, claims.DefaultTenant), s.Kind, s.Queue, string(s.Missed), enabled,
			nextFire(s, now), stampPtr(s.LastFireAt))
	}
	return t.flush()
}

// scheduleNotFound is the error for an unknown schedule name.
func scheduleNotFound(name string, err error) error {
	return withHint(newError(fmt.Sprintf("schedule %q not found", name), err), "agentctl schedule list shows the schedules")
}

func (a *app) schedulePause(ctx context.Context, name string) error {
	store, err := a.schedules(ctx)
	if err != nil {
		return err
	}
	before, berr := store.Get(ctx, name)
	s, err := store.Pause(ctx, name)
	if errors.Is(err, agentledger.ErrNotFound) {
		return scheduleNotFound(name, err)
	}
	if err != nil {
		return err
	}
	if a.wantJSON() {
		return printJSON(a.stdout, viewSchedule(s))
	}
	msg := "schedule %s paused: it enqueues nothing until resumed\n"
	if berr == nil && before.Paused {
		msg = "schedule %s was paused already: it enqueues nothing until resumed\n"
	}
	_, err = fmt.Fprintf(a.stdout, msg, name)
	return err
}

func (a *app) scheduleResume(ctx context.Context, name string) error {
	store, err := a.schedules(ctx)
	if err != nil {
		return err
	}
	before, berr := store.Get(ctx, name)
	s, err := store.Resume(ctx, name)
	if errors.Is(err, agentledger.ErrNotFound) {
		return scheduleNotFound(name, err)
	}
	if err != nil {
		return err
	}
	if a.wantJSON() {
		return printJSON(a.stdout, viewSchedule(s))
	}
	msg := "schedule %s resumed: next fire %s\n"
	if berr == nil && !before.Paused {
		msg = "schedule %s was not paused: nothing changed; next fire %s\n"
	}
	_, err = fmt.Fprintf(a.stdout, msg, name, nextFire(s, time.Now()))
	return err
}

// scheduleRemoved is the JSON output of schedule rm.
type scheduleRemoved struct {
	Name    string `json:"name"`
	Removed bool   `json:"removed"`
}

func (a *app) scheduleRemove(ctx context.Context, name string) error {
	store, err := a.schedules(ctx)
	if err != nil {
		return err
	}
	err = store.Remove(ctx, name)
	if errors.Is(err, agentledger.ErrNotFound) {
		return scheduleNotFound(name, err)
	}
	if err != nil {
		return err
	}
	if a.wantJSON() {
		return printJSON(a.stdout, scheduleRemoved{Name: name, Removed: true})
	}
	_, err = fmt.Fprintf(a.stdout, "schedule %s removed\n", name)
	return err
}
