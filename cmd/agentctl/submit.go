package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/admit"
	"github.com/agentledger/agentledger/agent"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/grants"
	"github.com/agentledger/agentledger/registry"
)

// submitFlags are the options of agentctl submit as given.
type submitFlags struct {
	tenant, queue, kind string
	payload             payloadSpec
	priority            int16
	runAt               string // RFC 3339 or +duration
	maxAttempts         int32
	key                 string
	file                string // task JSON file, or - for standard input
	allowUnserved       bool   // queue it even if no live worker serves it
	fileLabel           string // the file as errors name it

	// payloadJSON is the payload of the --file task, used unless --payload
	// is given.
	payloadJSON json.RawMessage
	// fromFile names the fields the --file task set (and no flag
	// overrode) by their claims.EnqueueParams validation names; a bad
	// value is reported as the file's.
	fromFile map[string]bool
}

func (a *app) submitCmd() *cobra.Command {
	var f submitFlags
	cmd := &cobra.Command{
		Use:   "submit (--kind KIND [flags] | --file FILE|- [flags])",
		Short: "Submit a task",
		Long: `Submit one task and print its id and state.

The task comes from the flags, or from a JSON object in --file (- for
standard input) with the fields kind, payload, queue, tenant, priority,
run_at, max_attempts, idempotency_key and allow_unserved; a flag given as
well wins over the file's field. --run-at (and run_at) is an RFC 3339 time
or +duration from now.

A task no live worker would claim is refused (exit 2) with what the live
workers serve: its kind is served by none, or only on other queues (live:
announced within the last minute; see agentctl workers). --allow-unserved
queues it anyway, for a worker that is not up yet. A steps payload is
checked as it would be when it runs: its structure, its tools against
those the live workers serve, and each step's arguments against its tool's
schema as they announced it (arguments holding a ${steps.…} reference are
known only when the step runs and are not held against it). What the
payload names outside the tenant's grant in force is said on stderr and the
task is queued: the grant binds the run, call by call, not the operator.

With --idempotency-key the submission is idempotent per tenant: submitting the
same request again under the same key prints "duplicate: existing task N" and
succeeds; the same key with a different request fails (exit 1) and stores
nothing. The request is the queue, kind, payload, priority and max attempts;
--run-at is scheduling, not identity, so a retry with a relative +duration is
still a duplicate (the first submission's run time stands).`,
		Example: `  agentctl submit --kind echo --payload '{"msg":"hi"}'
  agentctl submit --kind steps --payload @report.json --run-at +30m
  agentctl submit --kind steps --idempotency-key order-42 --payload - < order.json
  agentctl submit --file task.json --priority 10
  agentctl submit --kind invoice --queue billing --allow-unserved
  echo '{"kind":"echo","payload":{"n":1},"idempotency_key":"n-1"}' | agentctl submit --file -`,
		Args: cobra.NoArgs,
	}
	cmd.RunE = a.action(func(ctx context.Context, _ []string) error {
		g, err := f.withFile(a.stdin, cmd.Flags().Changed)
		if err != nil {
			return err
		}
		return a.submit(ctx, &g)
	})
	fl := cmd.Flags()
	fl.StringVar(&f.kind, "kind", "", "task kind, which selects the handler (required, here or in --file)")
	fl.Var(&f.payload, "payload", "JSON payload, @file to read it from a file, or - for standard input (default {})")
	fl.StringVar(&f.queue, "queue", "", `queue (default "`+claims.DefaultQueue+`")`)
	tenantFlag(cmd, &f.tenant, `tenant (default "`+claims.DefaultTenant+`")`)
	fl.Int16Var(&f.priority, "priority", 0, "priority 0..100, lower runs first")
	fl.StringVar(&f.runAt, "run-at", "", "run no sooner than this RFC 3339 time or +duration from now (e.g. +5m)")
	fl.Int32Var(&f.maxAttempts, "max-attempts", claims.DefaultMaxAttempts, "attempts before the task is dead-lettered")
	fl.StringVar(&f.key, "idempotency-key", "", "submission key: resubmitting the same request under it returns the existing task")
	fl.StringVar(&f.file, "file", "", "read the task from this JSON file, or - for standard input: "+
		"{kind, payload, queue, tenant, priority, run_at, max_attempts, idempotency_key, allow_unserved}")
	fl.BoolVar(&f.allowUnserved, "allow-unserved", false,
		"queue the task even if no live worker serves its kind on its queue (for a worker that is not up yet); its steps' tools and arguments are not checked")
	_ = cmd.MarkFlagFilename("file", "json")
	return cmd
}

// submitResult is submit's JSON output.
type submitResult struct {
	Task      *agentledger.Task `json:"task"`
	Duplicate bool              `json:"duplicate"`
}

func (a *app) submit(ctx context.Context, f *submitFlags) error {
	now := time.Now()
	if f.maxAttempts == 0 { // the flag defaults to 25: 0 was given, and would silently mean the default
		return agentledger.Invalid("--max-attempts", "0 is outside 1..1000")
	}
	p, err := f.params(a.stdin, now)
	if err != nil {
		return err
	}
	s, err := a.store(ctx)
	if err != nil {
		return err
	}
	// The door as the operator's: the published schema of a typed kind, a
	// live worker serving the task unless --allow-unserved.
	door := &admit.Door{}
	p, err = door.Admit(ctx, a.db.Pool, admit.Submission{Caller: admit.Operator, Params: p, Unserved: f.allowUnserved,
		Override: "submit with --allow-unserved"}) // a.store opened the database and checked its schema
	if err != nil {
		return f.admitError(ctx, registry.New(a.db.Pool), p.Kind, p.Queue, err)
	}
	res, err := s.Enqueue(ctx, p)
	if errors.Is(err, agentledger.ErrKeyReuse) {
		hint := "an idempotency key names one request: submit a different request under a new --idempotency-key"
		if strings.HasPrefix(f.runAt, "+") {
			hint += "; note that a relative --run-at is a different time on every call"
		}
		return withHint(err, hint)
	}
	if err != nil {
		return err
	}
	if !res.Duplicate {
		a.warnSubmitted(ctx, res.Task.ID, p)
	}
	if a.wantJSON() {
		return printJSON(a.stdout, submitResult{Task: res.Task, Duplicate: res.Duplicate})
	}
	if a.output == "id" {
		_, err := fmt.Fprintln(a.stdout, res.Task.ID)
		return err
	}
	t := res.Task
	state := string(t.State)
	// The database stamps run_at; a moment after our clock is still "now".
	if t.RunAt.Sub(now) >= time.Second && (t.State == agentledger.StateQueued || t.State == agentledger.StateRetrying) {
		state += ", runs " + relative(t.RunAt, now)
	}
	if res.Duplicate {
		_, err = fmt.Fprintf(a.stdout, "duplicate: existing task %d (%s)\n", t.ID, state)
	} else {
		_, err = fmt.Fprintf(a.stdout, "submitted task %d (%s)\n", t.ID, state)
	}
	return err
}

// warnSubmitted says on stderr what task id's payload (p's) names that
// its tenant's grant in force lacks (the operator's submission is not
// bound by the grant, but the run is, call by call, with the grant in
// force then: a daemon stores its config file's grants when it starts),
// and whether its tenant is one nobody knows (a typo?), known as tenant
// grant knows a tenant: by its row, or by a grant of its own. A look
// that fails says nothing: the task is queued either way.
func (a *app) warnSubmitted(ctx context.Context, id int64, p claims.EnqueueParams) {
	if g, err := grants.NewStore(a.db.Pool).For(ctx, p.Tenant); err == nil {
		if lack := admit.Lacks(g, p, ""); lack != nil {
			fmt.Fprintf(a.stderr, "agentctl: warning: task %d's %v: the call is refused when the task runs unless the grant allows it by then\n", id, lack)
		}
	}
	if _, err := a.knownTenant(ctx, a.db, p.Tenant); errors.Is(err, agentledger.ErrNotFound) {
		fmt.Fprintf(a.stderr, "agentctl: warning: tenant %s is not known (no tenant row, no grant): task %d is queued all the same "+
			"(agentctl tenant add %s first, or mind the name)\n", grants.ShellQuote(p.Tenant), id, grants.ShellQuote(p.Tenant))
	}
	// Each worker holds an agent task to its own limit, which it announces
	// (the door refused one above a live worker's): above the default, and
	// not known to be allowed by every live one, a worker left at the
	// default would fail the task.
	if p.Kind == agent.Kind && agent.CheckPayload(p.Payload, agent.DefaultMaxSteps) != nil && agent.CheckPayload(p.Payload, 0) == nil &&
		!a.stepsAllowed(ctx, p.Queue, p.Payload) {
		fmt.Fprintf(a.stderr, "agentctl: warning: task %d's max_steps is above the default limit of %d steps: a worker left at "+
			"it (agentd --llm-max-steps) fails the task\n", id, agent.DefaultMaxSteps)
	}
}

// stepsAllowed reports whether every live worker running agent tasks of
// queue with a model endpoint announced a max_steps limit that allows
// payload's, and one at least did (registry.AgentMaxSteps).
func (a *app) stepsAllowed(ctx context.Context, queue string, payload json.RawMessage) bool {
	asked, ok := agent.RequestedSteps(payload)
	if !ok {
		return false
	}
	live, err := registry.New(a.db.Pool).LiveWorkers(ctx)
	if err != nil {
		return false
	}
	allowed := false
	for _, w := range live {
		if !slices.Contains(w.Kinds, agent.Kind) || !slices.Contains(w.Queues, queue) || !slices.Contains(w.Caps, registry.CapModel) {
			continue
		}
		n, ok := registry.AgentMaxSteps(w.Caps)
		if !ok || asked > n {
			return false
		}
		allowed = true
	}
	return allowed
}

// schemaSource says whose payload schemas a typed kind's payload was held
// against.
func schemaSource(kind, queue string, published []registry.Published) string {
	by := make([]string, len(published))
	for i, p := range published {
		by[i] = p.By
	}
	switch {
	case !published[0].Live:
		return fmt.Sprintf("the %s kind's payload schema is the one worker %s published (no worker serving it is live now)", kind, by[0])
	case len(by) == 1:
		return fmt.Sprintf("the %s kind's payload schema is the one worker %s announced for queue %s (agentctl workers)", kind, by[0], queue)
	}
	return fmt.Sprintf("the live workers serving the %s kind from queue %s announce %d payload schemas (%s): a payload must fit each",
		kind, queue, len(by), strings.Join(by, ", "))
}

// admitError relabels a refusal of the door with the flag (or the
// --file field) at fault; a payload refused where the kind published its
// schema says where the schema is.
func (f *submitFlags) admitError(ctx context.Context, reg *registry.Store, kind, queue string, err error) error {
	var ie *agentledger.InvalidError
	if !errors.As(err, &ie) {
		return err
	}
	if ie.Field == "payload" {
		err = agentledger.Invalid(f.payloadField(), "%s", ie.Problem)
		if published, rerr := reg.KindSchemas(ctx, kind, queue); rerr == nil && len(published) > 0 {
			err = withHint(err, schemaSource(kind, queue, published))
		}
		return err
	}
	switch {
	case flagName(ie.Field) != "":
		err = f.fileField(ie.Field, agentledger.Invalid(flagName(ie.Field), "%s", ie.Problem))
		return withHint(err, "agentctl workers lists the live workers with their queues and kinds")
	}
	return err
}

// payloadField names where the payload came from in an error: --payload,
// or the --file task's payload field.
func (f *submitFlags) payloadField() string {
	if f.payload == "" && f.payloadJSON != nil {
		return fmt.Sprintf("payload (%s)", f.fileLabel)
	}
	return "--payload"
}

// flagName returns the submit flag that sets a claims.EnqueueParams field,
// named as in its validation errors; "" for a field without one.
func flagName(field string) string {
	switch field {
	case "tenant", "queue", "kind", "priority":
		return "--" + field
	case "max_attempts":
		return "--max-attempts"
	case "submission_key":
		return "--idempotency-key"
	}
	return ""
}

// params turns the flags into validated enqueue parameters. Every error
// matches agentledger.ErrInvalid and names the flag at fault.
func (f *submitFlags) params(stdin io.Reader, now time.Time) (claims.EnqueueParams, error) {
	if f.kind == "" {
		return claims.EnqueueParams{}, usagef(`required flag(s) "kind" not set: give --kind, or "kind" in the --file task`)
	}
	payload, err := readPayload(string(f.payload), stdin)
	if err != nil {
		return claims.EnqueueParams{}, err
	}
	if f.payload == "" {
		payload = f.payloadJSON
	}
	runAt, err := parseRunAt(f.runAt, now)
	if err != nil {
		return claims.EnqueueParams{}, f.fileField("run_at", err)
	}
	p := claims.EnqueueParams{
		Tenant: f.tenant, Queue: f.queue, Kind: f.kind, Payload: payload,
		Priority: f.priority, RunAt: runAt, MaxAttempts: f.maxAttempts, SubmissionKey: f.key,
	}
	if err := p.Validate(); err != nil {
		var ie *agentledger.InvalidError
		if errors.As(err, &ie) && ie.Field == "payload" {
			return p, agentledger.Invalid(f.payloadField(), "%s", ie.Problem)
		}
		if errors.As(err, &ie) && flagName(ie.Field) != "" {
			return p, f.fileField(ie.Field, agentledger.Invalid(flagName(ie.Field), "%s", ie.Problem))
		}
		return p, err
	}
	return p, nil
}

// payloadSpec is a --payload flag's value: JSON text, @file, or - for
// standard input. Given empty (a script's unset variable) it is refused,
// not taken for the default {} that leaving the flag out means.
type payloadSpec string

func (p *payloadSpec) String() string { return string(*p) }
func (p *payloadSpec) Type() string   { return "string" }
func (p *payloadSpec) Set(v string) error {
	if strings.TrimSpace(v) == "" {
		return errors.New("give JSON, @file, or - for standard input (leave the flag out for {})")
	}
	*p = payloadSpec(v)
	return nil
}

// readPayload returns the payload that spec names: JSON text, @file, or -
// for standard input. An empty spec is no payload (the default, {}).
func readPayload(spec string, stdin io.Reader) (json.RawMessage, error) {
	var (
		b     []byte
		err   error
		field = "--payload"
	)
	switch {
	case spec == "":
		return nil, nil
	case spec == "-":
		field = "--payload (standard input)"
		b, err = io.ReadAll(stdin)
	case strings.HasPrefix(spec, "@"):
		field = "--payload (" + spec[1:] + ")"
		b, err = os.ReadFile(spec[1:])
	default:
		b = []byte(spec)
	}
	if err != nil {
		return nil, agentledger.Invalid("--payload", "%v", err)
	}
	if err := checkJSON(b); err != nil {
		return nil, agentledger.Invalid(field, "%v", err)
	}
	return json.RawMessage(b), nil
}

// checkJSON reports whether b is one JSON value, saying where it is not.
func checkJSON(b []byte) error {
	var v json.RawMessage
	err := json.Unmarshal(b, &v)
	var se *json.SyntaxError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &se):
		return fmt.Errorf("invalid JSON at offset %d: %v", se.Offset, se)
	default:
		return fmt.Errorf("invalid JSON: %v", err)
	}
}

// parseRunAt parses --run-at: an RFC 3339 time, or +duration from now.
// Empty is the zero time (run now).
func parseRunAt(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if rest, ok := strings.CutPrefix(s, "+"); ok {
		d, err := time.ParseDuration(rest)
		if err == nil && d >= 0 {
			return now.Add(d), nil
		}
	} else if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	return time.Time{}, agentledger.Invalid("--run-at",
		"%q is neither an RFC 3339 time (2026-01-02T15:04:05Z) nor +duration (+5m, +1h30m)", s)
}
