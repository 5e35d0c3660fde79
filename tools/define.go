package tools

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/argschema"
	"github.com/agentledger/agentledger/flow"
	"github.com/agentledger/agentledger/ledger"
)

// Spec declares a tool whose arguments have a Go type: its name, what it
// tells a model, the class of its effect and how it performs it. The
// arguments' JSON Schema is generated from Args (a field's `jsonschema` tag
// is its description; omitempty fields are optional) unless Schema is set.
type Spec[Args any] struct {
	Name        string
	Description string
	// Class is the effect's class; a tool without one is refused.
	Class ledger.Class
	// Schema replaces the generated schema of the arguments.
	Schema json.RawMessage
	// Operation names the effect in the ledger; default the tool's name.
	// It is 1-128 letters, digits, '.', '_', ':' or '-', and not a
	// built-in effect's (a built-in tool's name, notify, or under
	// unbuilt:, llm., task., wait., mcp. or notify.).
	Operation string
	// Approval, when set, gates every call of the tool: a person decides
	// before it is performed (package approvals), unless the call
	// declares a gate of its own.
	Approval *Approval
	// Target names what a call reaches, for the fleet's limits and
	// circuit breakers (docs/limits.md), from its arguments: for an HTTP
	// API flow.HTTP of its URL, the target the http_request tool's calls
	// to that origin name, so that one limit holds them all; "" for a call
	// that reaches none. Nil: no call of the tool is held. A target that
	// is none of package flow's fails the call for good. A call's outcome
	// counts for the target's breaker as an HTTP call's does: a Result
	// with a 5xx Status, or an error that is not Permanent and comes with
	// no Status (no answer, a reset connection — and any other transient
	// error of Perform), is a failure of the target; another Status, a
	// nil error or a Permanent one is an answer.
	Target func(args Args) string
	// Hold bounds a call that names a Target: its context ends after
	// Hold (default DefaultHTTPTimeout), as an HTTP call's client times
	// out, and a breaker's probe is leased that long; a call cut short is
	// one the target did not answer.
	Hold time.Duration

	// Perform performs the effect once, for every class but Local. A keyed
	// tool sends c.DownstreamKey(target) to its target as its idempotency
	// key; a pure one reads only. A nil error records the Result as the
	// effect's outcome, served on every replay: a failure must be an
	// error (a plain one is tried again, agentledger.Permanent fails the
	// task). Answer classifies an HTTP answer so.
	Perform func(ctx context.Context, c ledger.Call, args Args) (ledger.Result, error)
	// Find looks up whether an earlier performance under c.Key landed
	// (Reconcilable only, and required there).
	Find func(ctx context.Context, c ledger.Call, args Args) (ledger.Result, bool, error)
	// PerformLocal performs a Local effect inside the ledger row's
	// transaction (Local only, and required there).
	PerformLocal func(ctx context.Context, c ledger.Call, db ledger.DB, args Args) (ledger.Result, error)
}

// toolName is what steps and models can call a tool.
var toolName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// mcpToolName is an MCP server's tool as package mcptools names it:
// server/tool.
var mcpToolName = regexp.MustCompile(`^[^/\s]+/[A-Za-z0-9_.-]{1,128}$`)

// CheckName refuses a name steps and models cannot call a tool by: 1-64
// letters, digits, _ or -, or server/tool for an MCP server's tool.
func CheckName(name string) error {
	if !toolName.MatchString(name) && !mcpToolName.MatchString(name) {
		return fmt.Errorf("tool name %q must be 1-64 letters, digits, _ or - (server/tool for an MCP server's)", agentledger.Clip(name))
	}
	return nil
}

// builtinOperations are the operations the built-in effects record, and
// (ending in '.' or ':') their namespaces. The ledger's readers take an
// effect so named for one of theirs: a replay sends again a failed
// unbuilt: effect, and its preview checks a tenant's grant for the tool
// or model an operation names (operator.toolNeed); the dispatcher finds
// its posts by notify.post.
var builtinOperations = []string{ledger.UnbuiltPrefix, "llm.", "task.", "wait.", "mcp.", "notify.", "notify",
	"http_request", "unsafe_http", "create_task", "wait_for_signal", "wait_timer", "wait_for_children"}

// checkOperation refuses an operation a tool of a program's cannot name
// its effects: one outside a name's alphabet (a newline would break
// agentctl's tables), or a built-in effect's.
func checkOperation(op string) error {
	if !agentledger.ValidName(op) {
		return fmt.Errorf("Operation %q must be 1-128 letters, digits, '.', '_', ':' or '-'", agentledger.Clip(op))
	}
	for _, b := range builtinOperations {
		switch {
		case op == b:
			return fmt.Errorf("Operation %q is a built-in effect's: name yours otherwise", op)
		case (strings.HasSuffix(b, ".") || strings.HasSuffix(b, ":")) && strings.HasPrefix(op, b):
			return fmt.Errorf("Operation %q is in the built-in effects' %s…: name yours otherwise", op, b)
		}
	}
	return nil
}

// Define returns the tool s declares, or an error naming what is missing.
func Define[Args any](s Spec[Args]) (Tool, error) {
	switch {
	case !toolName.MatchString(s.Name):
		return nil, fmt.Errorf("tools: tool name %q must be 1-64 letters, digits, _ or -", agentledger.Clip(s.Name))
	case s.Class == "":
		return nil, fmt.Errorf("tools: tool %q declares no effect class (pure, keyed, reconcilable, unsafe or local)", s.Name)
	case !s.Class.Valid():
		return nil, fmt.Errorf("tools: tool %q: unknown effect class %q", s.Name, s.Class)
	case s.Class == ledger.Local && s.PerformLocal == nil, s.Class != ledger.Local && s.Perform == nil:
		return nil, fmt.Errorf("tools: tool %q (%s) has nothing to perform: set %s", s.Name, s.Class, performField(s.Class))
	case s.Class == ledger.Reconcilable && s.Find == nil:
		return nil, fmt.Errorf("tools: tool %q is reconcilable but has no Find: an unknown outcome could not be looked up", s.Name)
	case s.Class != ledger.Reconcilable && s.Find != nil:
		return nil, fmt.Errorf("tools: tool %q is %s but has a Find, which only a reconcilable tool's unknown outcome is "+
			"looked up with: declare it reconcilable, or drop Find", s.Name, s.Class)
	case s.Class == ledger.Local && s.Perform != nil:
		return nil, fmt.Errorf("tools: tool %q is local but sets Perform, which a local tool never calls: set PerformLocal alone", s.Name)
	case s.Class != ledger.Local && s.PerformLocal != nil:
		return nil, fmt.Errorf("tools: tool %q (%s) sets PerformLocal, which only a local tool calls: set Perform alone", s.Name, s.Class)
	case s.Class == ledger.Local && s.Target != nil:
		return nil, fmt.Errorf("tools: tool %q is local but sets Target: a local effect is a write of this database, which no limit holds", s.Name)
	case s.Hold < 0:
		return nil, fmt.Errorf("tools: tool %q: Hold %v is negative", s.Name, s.Hold)
	}
	if s.Operation != "" {
		if err := checkOperation(s.Operation); err != nil {
			return nil, fmt.Errorf("tools: tool %q: %w", s.Name, err)
		}
	}
	if s.Approval != nil {
		// Else every call of the tool would fail at its gate.
		if err := s.Approval.Check(); err != nil {
			return nil, fmt.Errorf("tools: tool %q: its Approval: %w", s.Name, err)
		}
	}
	var schema *argschema.Schema
	var err error
	if len(s.Schema) == 0 {
		if schema, err = argschema.ObjectFor[Args](); err != nil {
			return nil, fmt.Errorf("tools: tool %q: the schema of its arguments: %w", s.Name, err)
		}
	} else if schema, err = argschema.Parse(s.Schema); err != nil {
		return nil, fmt.Errorf("tools: tool %q: its schema: %w", s.Name, err)
	}
	if err := argschema.Object(schema.JSON()); err != nil {
		return nil, fmt.Errorf("tools: tool %q: the schema of its arguments %w", s.Name, err)
	}
	if len(s.Schema) > 0 {
		if err := fieldsOf[Args](schema.JSON()); err != nil {
			return nil, fmt.Errorf("tools: tool %q: its schema %w", s.Name, err)
		}
	}
	if s.Operation == "" {
		s.Operation = s.Name
	}
	return &defined[Args]{spec: s, schema: schema}, nil
}

func performField(c ledger.Class) string {
	if c == ledger.Local {
		return "PerformLocal"
	}
	return "Perform"
}

type defined[Args any] struct {
	spec   Spec[Args]
	schema *argschema.Schema
}

func (d *defined[Args]) Name() string                { return d.spec.Name }
func (d *defined[Args]) Description() string         { return d.spec.Description }
func (d *defined[Args]) Parameters() json.RawMessage { return d.schema.JSON() }

// Class is the effect class the tool declared.
func (d *defined[Args]) Class() ledger.Class { return d.spec.Class }

// Approval is the gate the tool declared for its calls; nil for none.
func (d *defined[Args]) Approval() *Approval { return d.spec.Approval }

// Effect checks the call's arguments against the schema, decodes them into
// Args and returns the declared effect; arguments that do not fit are a
// permanent error naming the tool.
func (d *defined[Args]) Effect(call Call) (ledger.Effect, error) {
	args, request, err := d.decode(call.Args)
	if err != nil {
		return ledger.Effect{}, agentledger.Permanent(fmt.Errorf("%s: %w", d.spec.Name, err))
	}
	s := d.spec
	e := ledger.Effect{Operation: s.Operation, StepPath: call.StepPath, Class: s.Class, Request: request}
	switch {
	case s.Class == ledger.Local:
		e.PerformLocal = func(ctx context.Context, c ledger.Call, db ledger.DB) (ledger.Result, error) {
			return s.PerformLocal(ctx, c, db, args)
		}
	default:
		e.Perform = func(ctx context.Context, c ledger.Call) (ledger.Result, error) { return s.Perform(ctx, c, args) }
	}
	if s.Find != nil {
		e.Reconcile = func(ctx context.Context, c ledger.Call) (ledger.Result, bool, error) { return s.Find(ctx, c, args) }
	}
	if s.Target != nil {
		if t := s.Target(args); t != "" {
			target, _, err := flow.ParseTarget(t)
			if err != nil {
				return ledger.Effect{}, agentledger.Permanent(fmt.Errorf("%s: its Target: %w", s.Name, err))
			}
			hold := cmp.Or(s.Hold, DefaultHTTPTimeout)
			e.Target, e.Hold = target, hold
			perform := e.Perform
			e.Perform = func(ctx context.Context, c ledger.Call) (ledger.Result, error) {
				ctx, cancel := context.WithTimeout(ctx, hold)
				defer cancel()
				return perform(ctx, c)
			}
		}
	}
	return e, nil
}

// decode validates raw against the schema and decodes it strictly; the
// request the ledger hashes is the arguments as given.
func (d *defined[Args]) decode(raw json.RawMessage) (Args, json.RawMessage, error) {
	var args Args
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = json.RawMessage(`{}`)
	}
	if err := d.schema.Check("arguments", raw); err != nil {
		return args, nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&args); err != nil {
		return args, nil, err
	}
	return args, raw, nil
}

// fieldsOf refuses a hand-written schema naming a property that Args, a
// struct, has no field for: arguments the schema takes (or requires)
// would then fail to decode at every call. An Args that takes any object
// (a map, json.RawMessage, any) fits any schema.
func fieldsOf[Args any](doc json.RawMessage) error {
	gen, err := argschema.ObjectFor[Args]()
	if err != nil {
		return nil
	}
	var own, want struct {
		Properties           map[string]json.RawMessage `json:"properties"`
		Required             []string                   `json:"required"`
		AdditionalProperties json.RawMessage            `json:"additionalProperties"`
	}
	if json.Unmarshal(gen.JSON(), &own) != nil || json.Unmarshal(doc, &want) != nil || string(own.AdditionalProperties) != "false" {
		return nil // not a struct's closed schema: any property decodes
	}
	for _, name := range append(slices.Sorted(maps.Keys(want.Properties)), want.Required...) {
		if _, ok := own.Properties[name]; !ok {
			return fmt.Errorf("names %q, which is no field of its arguments' type %s: no call with it could be decoded",
				agentledger.Clip(name), reflect.TypeFor[Args]())
		}
	}
	return nil
}
