package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strings"

	"github.com/agentledger/agentledger"
)

// taskFile is a task as submit --file reads it: the body of the HTTP API's
// POST /v1/tasks, with the tenant and the idempotency key.
type taskFile struct {
	Kind           string          `json:"kind"`
	Payload        json.RawMessage `json:"payload"`
	Queue          string          `json:"queue"`
	Tenant         string          `json:"tenant"`
	Priority       *int            `json:"priority"`
	RunAt          string          `json:"run_at"`
	MaxAttempts    *int            `json:"max_attempts"`
	IdempotencyKey string          `json:"idempotency_key"`
	AllowUnserved  bool            `json:"allow_unserved"`
}

// taskFileFields lists taskFile's fields, for error messages.
const taskFileFields = "kind, payload, queue, tenant, priority, run_at, max_attempts, idempotency_key, allow_unserved"

// withFile returns the flags completed by the task in --file, if any: a
// field whose flag was set (changed reports it) keeps the flag's value.
func (f *submitFlags) withFile(stdin io.Reader, changed func(flag string) bool) (submitFlags, error) {
	g := *f
	if f.file == "" {
		return g, nil
	}
	if f.file == "-" && f.payload == "-" {
		return g, usagef("--file - and --payload - cannot both read standard input: put the payload in the task file")
	}
	label := f.file
	if f.file == "-" {
		label = "standard input"
	}
	t, err := readTaskFile(f.file, label, stdin)
	if err != nil {
		return g, err
	}
	g.fromFile = map[string]bool{}
	// take applies a field of the file unless its flag was given; field is
	// its claims.EnqueueParams validation name.
	take := func(flag, field string, present bool, apply func()) {
		if present && !changed(flag) {
			apply()
			g.fromFile[field] = true
		}
	}
	if t.Priority != nil && (*t.Priority < math.MinInt16 || *t.Priority > math.MaxInt16) {
		return g, agentledger.Invalid("priority ("+label+")", "%d is outside 0..100 (lower runs first)", *t.Priority)
	}
	if t.MaxAttempts != nil && (*t.MaxAttempts < math.MinInt32 || *t.MaxAttempts > math.MaxInt32) {
		return g, agentledger.Invalid("max_attempts ("+label+")", "%d is outside 1..1000", *t.MaxAttempts)
	}
	take("kind", "kind", t.Kind != "", func() { g.kind = t.Kind })
	take("queue", "queue", t.Queue != "", func() { g.queue = t.Queue })
	take("tenant", "tenant", t.Tenant != "", func() { g.tenant = t.Tenant })
	take("priority", "priority", t.Priority != nil, func() { g.priority = int16(*t.Priority) })
	take("run-at", "run_at", t.RunAt != "", func() { g.runAt = t.RunAt })
	take("max-attempts", "max_attempts", t.MaxAttempts != nil, func() { g.maxAttempts = int32(*t.MaxAttempts) })
	take("idempotency-key", "submission_key", t.IdempotencyKey != "", func() { g.key = t.IdempotencyKey })
	take("allow-unserved", "allow_unserved", t.AllowUnserved, func() { g.allowUnserved = true })
	if len(t.Payload) > 0 && string(t.Payload) != "null" && !changed("payload") {
		g.payloadJSON = t.Payload
	}
	g.fileLabel = label
	return g, nil
}

// readTaskFile reads and decodes the task in file (- for stdin), named
// label in errors.
func readTaskFile(file, label string, stdin io.Reader) (taskFile, error) {
	var (
		t   taskFile
		b   []byte
		err error
	)
	if file == "-" {
		b, err = io.ReadAll(stdin)
	} else {
		b, err = os.ReadFile(file)
	}
	if err != nil {
		return t, agentledger.Invalid("--file", "%v", err)
	}
	field := "--file (" + label + ")"
	if err := checkJSON(b); err != nil {
		return t, agentledger.Invalid(field, "%v", err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	err = dec.Decode(&t)
	var te *json.UnmarshalTypeError
	switch {
	case err == nil:
		return t, nil
	case errors.As(err, &te) && te.Field == "":
		return t, agentledger.Invalid(field, "the task must be a JSON object with the fields %s, not %s", taskFileFields, te.Value)
	case errors.As(err, &te):
		return t, agentledger.Invalid(field, "%s must be a %s, not %s", te.Field, jsonKind(te.Type.Kind().String()), te.Value)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return t, agentledger.Invalid(field, "%s: the fields are %s",
			strings.TrimPrefix(err.Error(), "json: "), taskFileFields)
	}
	return t, agentledger.Invalid(field, "%v", err)
}

// jsonKind names the JSON type a Go kind decodes from.
func jsonKind(goKind string) string {
	switch {
	case strings.HasPrefix(goKind, "int"), strings.HasPrefix(goKind, "uint"), strings.HasPrefix(goKind, "float"):
		return "number"
	case goKind == "string":
		return "string"
	}
	return goKind
}

// fileField relabels err, a validation error of field (a
// claims.EnqueueParams name, or run_at), as the --file task's when the
// value came from it.
func (f *submitFlags) fileField(field string, err error) error {
	var ie *agentledger.InvalidError
	if !f.fromFile[field] || !errors.As(err, &ie) {
		return err
	}
	name := field
	if field == "submission_key" {
		name = "idempotency_key"
	}
	return agentledger.Invalid(fmt.Sprintf("%s (%s)", name, f.fileLabel), "%s", ie.Problem)
}
