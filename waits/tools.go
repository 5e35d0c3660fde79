package waits

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/canonjson"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/tools"
)

// The wait tools' names.
const (
	ToolSignal   = "wait_for_signal"
	ToolTimer    = "wait_timer"
	ToolChildren = "wait_for_children"
)

// ToolOf names the wait tool that records operation (wait.signal,
// wait.timer, wait.children), or "" for another operation.
func ToolOf(operation string) string {
	switch operation {
	case "wait.signal":
		return ToolSignal
	case "wait.timer":
		return ToolTimer
	case "wait.children":
		return ToolChildren
	}
	return ""
}

// Tools returns the wait tools over s, for a registry.
func Tools(s *Store) []tools.Tool {
	return []tools.Tool{&signalTool{s}, &timerTool{s}, &childrenTool{s}}
}

// decode reads args strictly into v; errors are permanent and name the
// tool and the shape it takes.
func decode(tool, shape string, args json.RawMessage, v any) error {
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) && typeErr.Field != "" {
			// Often a template that rendered a value of another type.
			return agentledger.Permanent(fmt.Errorf("%s: argument %q must be a %s, not a JSON %s", tool, typeErr.Field,
				jsonType(typeErr.Type), typeErr.Value))
		}
		return agentledger.Permanent(fmt.Errorf("%s: arguments must be %s: %v", tool, shape, strings.TrimPrefix(err.Error(), "json: ")))
	}
	return nil
}

// jsonType names the JSON type a Go field takes.
func jsonType(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "string"
	case reflect.Slice, reflect.Array:
		return "list"
	case reflect.Map, reflect.Struct:
		return "object"
	case reflect.Bool:
		return "boolean"
	}
	return "number"
}

// corrKey is a correlation key: a string, or a whole number (an order id
// a template took from an earlier result), which is its decimal text.
type corrKey string

func (k *corrKey) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*k = corrKey(s)
		return nil
	}
	var n json.Number
	if err := json.Unmarshal(b, &n); err == nil {
		if _, err := n.Int64(); err == nil {
			*k = corrKey(n.String())
			return nil
		}
	}
	return fmt.Errorf("key must be a string or a whole number, not %s", b)
}

// duration parses a timeout or a timer: from 1s to MaxTimeout.
func duration(field, s string, def time.Duration) (time.Duration, error) {
	if s == "" {
		return def, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < time.Second || d > MaxTimeout {
		return 0, agentledger.Invalid(field, "%q must be a duration from 1s to %s, like 30m or 48h", s, agentledger.DurationText(MaxTimeout))
	}
	return d, nil
}

// effect is the ledger effect of a wait call, performed by await: pure —
// looking again at a wait answers the same, and the first answer recorded
// stands — so the ledger performs it holding no transaction and records
// only an end: the result once the wait is done (a replay is served from
// the journal), its failure once it ended otherwise; a call that parks
// records nothing. A local effect would hold its ledger row's transaction,
// and a connection, while the wait's own statements take another: with
// every connection of the pool held so, no call could go on.
func effect(call tools.Call, op string, request any, await func(ctx context.Context) (ledger.Result, error)) (ledger.Effect, error) {
	if call.Task == nil {
		return ledger.Effect{}, agentledger.Permanent(errors.New(op + ": no calling task"))
	}
	req, err := canonjson.MarshalValue(request)
	if err != nil {
		return ledger.Effect{}, agentledger.Permanent(fmt.Errorf("%s: %v", op, err))
	}
	return ledger.Effect{Operation: op, StepPath: call.StepPath, Class: ledger.Pure, Request: req,
		Perform: func(ctx context.Context, _ ledger.Call) (ledger.Result, error) {
			res, err := await(ctx)
			if errors.Is(err, ErrBusy) {
				return ledger.Result{}, busy(strings.TrimPrefix(op, "wait."))
			}
			return res, err
		}}, nil
}

// Class says every wait tool is pure whatever its arguments (tools.Classed):
// announced so, a wait declared as a compensation, or given one, is
// refused at submit.
func (*signalTool) Class() ledger.Class   { return ledger.Pure }
func (*timerTool) Class() ledger.Class    { return ledger.Pure }
func (*childrenTool) Class() ledger.Class { return ledger.Pure }

func waitOf(call tools.Call, kind string) Wait {
	return Wait{TaskID: call.Task.ID, Generation: call.Task.Generation, Step: call.StepPath, Tenant: call.Task.Tenant, Kind: kind}
}

// signalTool waits for a named signal with a correlation key.
type signalTool struct{ s *Store }

type signalArgs struct {
	Signal  string  `json:"signal"`
	Key     corrKey `json:"key"`
	Timeout string  `json:"timeout,omitempty"`
}

func (*signalTool) Name() string { return ToolSignal }
func (*signalTool) Description() string {
	return "Wait for the signal of the given name and correlation key (a payment callback, a person's reply), " +
		"up to timeout (default 24h); returns the signal's JSON payload. The task sleeps meanwhile."
}
func (*signalTool) Parameters() json.RawMessage {
	return json.RawMessage(`{"type":"object","additionalProperties":false,"required":["signal","key"],"properties":{` +
		`"signal":{"type":"string","pattern":"^[A-Za-z0-9._:/-]{1,128}$"},` +
		`"key":{"type":["string","integer"],"minLength":1,"maxLength":255,"description":"the correlation key; a whole number is taken as its decimal text"},` +
		`"timeout":{"type":"string","description":"a duration from 1s to 8760h, like 30m; default 24h"}}}`)
}

// parse reads and checks a call's arguments.
func (*signalTool) parse(args json.RawMessage) (signalArgs, time.Duration, error) {
	var a signalArgs
	if err := decode(ToolSignal, `{"signal", "key", "timeout"?}`, args, &a); err != nil {
		return a, 0, err
	}
	timeout, err := duration("timeout", a.Timeout, DefaultTimeout)
	if err == nil {
		if err = checkName("signal", a.Signal); err == nil {
			err = checkKey("key", string(a.Key))
		}
	}
	if err != nil {
		return a, 0, agentledger.Permanent(fmt.Errorf("%s: %w", ToolSignal, err))
	}
	return a, timeout, nil
}

// CheckArgs checks literal arguments at the door.
func (t *signalTool) CheckArgs(args json.RawMessage) error { _, _, err := t.parse(args); return err }

// Effect is operation "wait.signal".
func (t *signalTool) Effect(call tools.Call) (ledger.Effect, error) {
	a, timeout, err := t.parse(call.Args)
	if err != nil {
		return ledger.Effect{}, err
	}
	return effect(call, "wait.signal", a, func(ctx context.Context) (ledger.Result, error) {
		w := waitOf(call, KindSignal)
		w.Signal, w.Key = a.Signal, string(a.Key)
		got, err := t.s.Await(ctx, w, nil, timeout)
		if err != nil {
			return ledger.Result{}, err
		}
		return Outcome(got)
	})
}

// timerTool sleeps durably: for a duration, or until a time.
type timerTool struct{ s *Store }

type timerArgs struct {
	For   string `json:"for,omitempty"`
	Until string `json:"until,omitempty"`
}

func (*timerTool) Name() string { return ToolTimer }
func (*timerTool) Description() string {
	return "Sleep durably for a duration (\"for\": \"10m\") or until a time (\"until\": RFC 3339), releasing the task meanwhile; " +
		"returns when it fired."
}
func (*timerTool) Parameters() json.RawMessage {
	return json.RawMessage(`{"type":"object","additionalProperties":false,"properties":{` +
		`"for":{"type":"string","description":"a duration from 1s to 8760h, like 10m"},` +
		`"until":{"type":"string","format":"date-time"}}}`)
}

// CheckArgs checks literal arguments at the door.
func (t *timerTool) CheckArgs(args json.RawMessage) error { _, _, _, err := t.parse(args); return err }

// Effect is operation "wait.timer": its deadline is fixed when the step is
// first reached.
func (t *timerTool) Effect(call tools.Call) (ledger.Effect, error) {
	a, until, d, err := t.parse(call.Args)
	if err != nil {
		return ledger.Effect{}, err
	}
	return effect(call, "wait.timer", a, func(ctx context.Context) (ledger.Result, error) {
		got, err := t.s.Await(ctx, waitOf(call, KindTimer), until, d)
		if err != nil {
			return ledger.Result{}, err
		}
		return Outcome(got)
	})
}

// parse reads and checks a call's arguments: the deadline (until) or the
// duration.
func (*timerTool) parse(args json.RawMessage) (timerArgs, *time.Time, time.Duration, error) {
	var a timerArgs
	if err := decode(ToolTimer, `{"for": "10m"} or {"until": "2026-12-06T09:00:00Z"}`, args, &a); err != nil {
		return a, nil, 0, err
	}
	var until *time.Time
	var d time.Duration
	var err error
	switch {
	case (a.For == "") == (a.Until == ""):
		err = agentledger.Invalid("for", `give "for" (a duration) or "until" (a time), one of them`)
	case a.For != "":
		d, err = duration("for", a.For, 0)
	default:
		var at time.Time
		if at, err = time.Parse(time.RFC3339, a.Until); err != nil {
			err = agentledger.Invalid("until", "%q is not an RFC 3339 time, like 2026-12-06T09:00:00Z", a.Until)
		} else if at.After(time.Now().Add(MaxTimeout)) {
			err = agentledger.Invalid("until", "%s is more than %s away", a.Until, agentledger.DurationText(MaxTimeout))
		}
		until = &at
	}
	if err != nil {
		return a, nil, 0, agentledger.Permanent(fmt.Errorf("%s: %w", ToolTimer, err))
	}
	return a, until, d, nil
}

// childrenTool waits for the task's children.
type childrenTool struct{ s *Store }

type childrenArgs struct {
	Mode      string  `json:"mode,omitempty"`
	OnFailure string  `json:"on_failure,omitempty"`
	Tasks     []int64 `json:"tasks,omitempty"`
	Timeout   string  `json:"timeout,omitempty"`
}

func (*childrenTool) Name() string { return ToolChildren }
func (*childrenTool) Description() string {
	return "Wait for the child tasks this task started (create_task): all of them (mode \"all\", the default) or the first " +
		"that succeeds (\"any\"); a child that fails fails this call (on_failure \"fail\", the default) or is returned " +
		"with the others (\"return\"). Returns each child's state and result."
}
func (*childrenTool) Parameters() json.RawMessage {
	return json.RawMessage(`{"type":"object","additionalProperties":false,"properties":{` +
		`"mode":{"enum":["all","any"]},"on_failure":{"enum":["fail","return"]},` +
		`"tasks":{"type":"array","items":{"type":"integer"},"description":"the children to wait for; default every one"},` +
		`"timeout":{"type":"string","description":"a duration from 1s to 8760h; default 24h"}}}`)
}

// CheckArgs checks literal arguments at the door. Literal task ids are
// refused there: a task's children are created when it runs, after its
// payload was fixed, so an id written into it names some other task. They
// come from create_task's results (${steps.0.body.task_id}), which the
// door does not see, and the run checks.
func (t *childrenTool) CheckArgs(args json.RawMessage) error {
	a, _, _, err := t.parse(args)
	if err == nil && len(a.Tasks) > 0 {
		err = agentledger.Permanent(fmt.Errorf("%s: %w", ToolChildren, agentledger.Invalid("tasks",
			"task %d cannot be a child of this task, whose children are created when it runs: name them by create_task's results "+
				"(${steps.0.body.task_id}) or leave tasks out to wait for every child", a.Tasks[0])))
	}
	return err
}

// parse reads and checks a call's arguments, with the defaults filled.
func (*childrenTool) parse(args json.RawMessage) (childrenArgs, ChildrenSpec, time.Duration, error) {
	var a childrenArgs
	if err := decode(ToolChildren, `{"mode"?, "on_failure"?, "tasks"?, "timeout"?}`, args, &a); err != nil {
		return a, ChildrenSpec{}, 0, err
	}
	spec := ChildrenSpec{Mode: a.Mode, OnFailure: a.OnFailure, Tasks: a.Tasks}
	var err error
	switch {
	case spec.Mode != "" && spec.Mode != "all" && spec.Mode != "any":
		err = agentledger.Invalid("mode", "%q must be all or any", spec.Mode)
	case spec.OnFailure != "" && spec.OnFailure != "fail" && spec.OnFailure != "return":
		err = agentledger.Invalid("on_failure", "%q must be fail or return", spec.OnFailure)
	}
	timeout, terr := duration("timeout", a.Timeout, DefaultTimeout)
	if err == nil {
		err = terr
	}
	if err != nil {
		return a, spec, 0, agentledger.Permanent(fmt.Errorf("%s: %w", ToolChildren, err))
	}
	spec.Mode = cmp.Or(spec.Mode, "all")
	spec.OnFailure = cmp.Or(spec.OnFailure, "fail")
	return a, spec, timeout, nil
}

// Effect is operation "wait.children".
func (t *childrenTool) Effect(call tools.Call) (ledger.Effect, error) {
	a, spec, timeout, err := t.parse(call.Args)
	if err != nil {
		return ledger.Effect{}, err
	}
	return effect(call, "wait.children", a, func(ctx context.Context) (ledger.Result, error) {
		if err := t.s.CheckChildren(ctx, call.Task.ID, call.Task.Generation, spec); err != nil {
			return ledger.Result{}, agentledger.Permanent(fmt.Errorf("%s: %w", ToolChildren, err))
		}
		w := waitOf(call, KindChildren)
		w.Spec, _ = json.Marshal(spec) // ints and strings always encode
		got, err := t.s.Await(ctx, w, nil, timeout)
		if err != nil {
			return ledger.Result{}, err
		}
		res, err := Outcome(got)
		if err == nil && spec.OnFailure == "fail" {
			if c, failed := Failed(got.Result); failed {
				return ledger.Result{}, agentledger.Permanent(fmt.Errorf("child task %d (%s) ended %s: %s", c.TaskID, c.Kind, c.State, c.Error))
			}
		}
		return res, err
	})
}

// CheckArgs checks the literal arguments of a call of one of the wait
// tools (nil for any other tool): what a door without a registry (agentctl,
// client.Database) checks of them.
func CheckArgs(tool string, args json.RawMessage) error {
	for _, t := range Tools(nil) {
		if t.Name() == tool {
			return t.(tools.ArgsChecker).CheckArgs(args)
		}
	}
	return nil
}
