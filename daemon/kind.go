package daemon

import (
	"bytes"
	"context"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/argschema"
	"github.com/agentledger/agentledger/worker"
)

// KindHandler is a task kind whose payload has a Go type: the daemon checks
// a payload against it when a task is submitted through the HTTP API (a
// 422 naming the field at fault) and decodes it again when the task runs.
type KindHandler interface {
	worker.Handler
	// CheckPayload decodes payload as the kind's arguments and validates
	// them; the error is an *agentledger.InvalidError naming the field.
	CheckPayload(payload json.RawMessage) error
	// PayloadSchema is the JSON Schema of the payload, which the daemon
	// publishes so that agentctl and other daemons' APIs check it too.
	PayloadSchema() json.RawMessage
}

// Validator is implemented by argument types that check themselves after
// decoding; its error is returned as the payload's.
type Validator interface{ Validate() error }

// Kind returns a typed task kind: fn gets the task's payload decoded into
// Args (unknown fields refused; an absent or null payload is {}, so a
// pointer Args is never nil; then Args.Validate, if Args or *Args has one)
// and its Result is stored as the task's result, as JSON. A payload that
// does not decode is a permanent failure naming the field: retrying
// cannot fix it.
// It panics if Args has no JSON Schema (a map with non-string keys, a
// func, a channel) or Result cannot encode as JSON (a func, a channel, a
// complex number): a programming error, found at registration rather than
// when the first task has run.
func Kind[Args, Result any](fn func(ctx context.Context, t *agentledger.Task, args Args) (Result, error)) KindHandler {
	schema, err := argschema.For[Args]()
	if err != nil {
		panic(fmt.Sprintf("daemon.Kind: the payload type has no JSON Schema: %v", err))
	}
	if err := encodable(reflect.TypeFor[Result](), map[reflect.Type]bool{}); err != nil {
		panic(fmt.Sprintf("daemon.Kind: the result type %s does not encode as JSON: %v", reflect.TypeFor[Result](), err))
	}
	return typedKind[Args, Result]{fn: fn, schema: schema.JSON()}
}

// marshalers are the interfaces through which a type encodes itself.
var (
	jsonMarshaler = reflect.TypeFor[json.Marshaler]()
	textMarshaler = reflect.TypeFor[encoding.TextMarshaler]()
)

// encodable reports why values of t cannot encode as JSON, as far as the
// type says (an interface's dynamic value is known only when encoded).
func encodable(t reflect.Type, seen map[reflect.Type]bool) error {
	if seen[t] || t.Implements(jsonMarshaler) || reflect.PointerTo(t).Implements(jsonMarshaler) ||
		t.Implements(textMarshaler) || reflect.PointerTo(t).Implements(textMarshaler) {
		return nil
	}
	seen[t] = true
	switch t.Kind() {
	case reflect.Chan, reflect.Func, reflect.Complex64, reflect.Complex128, reflect.UnsafePointer:
		return fmt.Errorf("%s is a %s", t, t.Kind())
	case reflect.Pointer, reflect.Slice, reflect.Array:
		return encodable(t.Elem(), seen)
	case reflect.Map:
		switch k := t.Key(); {
		case k.Kind() == reflect.String, k.Kind() >= reflect.Int && k.Kind() <= reflect.Uintptr, k.Implements(textMarshaler):
		default:
			return fmt.Errorf("%s has keys of type %s", t, k)
		}
		return encodable(t.Elem(), seen)
	case reflect.Struct:
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() && !f.Anonymous || f.Tag.Get("json") == "-" {
				continue
			}
			if err := encodable(f.Type, seen); err != nil {
				return fmt.Errorf("field %s: %w", f.Name, err)
			}
		}
	}
	return nil
}

type typedKind[Args, Result any] struct {
	fn     func(context.Context, *agentledger.Task, Args) (Result, error)
	schema json.RawMessage
}

func (k typedKind[Args, Result]) PayloadSchema() json.RawMessage { return k.schema }

func (k typedKind[Args, Result]) nilFunc() bool { return k.fn == nil }

func (k typedKind[Args, Result]) CheckPayload(payload json.RawMessage) error {
	_, err := decodeArgs[Args](payload)
	return err
}

func (k typedKind[Args, Result]) Work(ctx context.Context, t *agentledger.Task) (json.RawMessage, error) {
	args, err := decodeArgs[Args](t.Payload)
	if err != nil {
		return nil, agentledger.Permanent(fmt.Errorf("the payload of this %s task is not valid: %w", t.Kind, err))
	}
	res, err := k.fn(ctx, t, args)
	if err != nil {
		return nil, err
	}
	out, err := json.Marshal(res)
	if err != nil {
		return nil, agentledger.Permanent(fmt.Errorf("the result of this %s task does not encode as JSON: %v", t.Kind, err))
	}
	return out, nil
}

// decodeArgs decodes a payload strictly, naming the field at fault as
// payload.<path>.
func decodeArgs[Args any](payload json.RawMessage) (Args, error) {
	var args Args
	// null is an absent payload, as the door takes it: decoded, it would
	// leave a pointer Args nil for the handler, and unvalidated.
	if p := bytes.TrimSpace(payload); len(p) == 0 || string(p) == "null" {
		payload = json.RawMessage(`{}`)
	}
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&args); err != nil {
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &te):
			return args, agentledger.Invalid(field(te.Field), "%s", agentledger.TypeProblem(te))
		case strings.HasPrefix(err.Error(), "json: unknown field "):
			name := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
			return args, agentledger.Invalid(field(name), "is not a field of this kind's payload")
		}
		return args, agentledger.Invalid("payload", "is not valid JSON: %v", err)
	}
	// Args's own methods for a pointer Args (*Order: &args is an **Order,
	// which has none), its pointer's for a value one.
	v, ok := any(&args).(Validator)
	if !ok {
		v, ok = any(args).(Validator)
	}
	if ok {
		if err := v.Validate(); err != nil {
			var ie *agentledger.InvalidError
			if errors.As(err, &ie) {
				return args, agentledger.Invalid(field(ie.Field), "%s", ie.Problem)
			}
			return args, agentledger.Invalid("payload", "%v", err)
		}
	}
	return args, nil
}

func field(name string) string {
	if name == "" {
		return "payload"
	}
	return "payload." + name
}
