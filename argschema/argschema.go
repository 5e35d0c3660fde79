// Package argschema is the JSON Schema of a tool's arguments or a typed
// kind's payload: generated from a Go type (google/jsonschema-go, the
// library the MCP Go SDK uses), and the check of a JSON value against one,
// whose error is an agentledger.InvalidError.
package argschema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/agentledger/agentledger"
)

// Schema is a resolved schema, ready to check values.
type Schema struct {
	doc      json.RawMessage
	resolved *jsonschema.Resolved
}

// For is the schema of T (a field's `jsonschema` tag is its description;
// omitempty fields are optional).
func For[T any]() (*Schema, error) {
	sc, err := jsonschema.For[T](nil)
	if err != nil {
		return nil, err
	}
	doc, err := json.Marshal(sc)
	if err != nil {
		return nil, err
	}
	return resolve(sc, doc)
}

// ObjectFor is For[T] for a tool's arguments, which are an object: the
// schema of a pointer type (["null", "object"]) is made an object's, as
// a step's args and a model's tool call are (and as a model API takes a
// function's parameters). Other types keep their schema, which Object
// then refuses.
func ObjectFor[T any]() (*Schema, error) {
	sc, err := jsonschema.For[T](nil)
	if err != nil {
		return nil, err
	}
	if sc.Type == "" && slices.Contains(sc.Types, "object") {
		sc.Type, sc.Types = "object", nil
	}
	doc, err := json.Marshal(sc)
	if err != nil {
		return nil, err
	}
	return resolve(sc, doc)
}

// Parse reads a schema written as JSON.
func Parse(doc json.RawMessage) (*Schema, error) {
	var sc jsonschema.Schema
	if err := json.Unmarshal(doc, &sc); err != nil {
		return nil, err
	}
	return resolve(&sc, doc)
}

func resolve(sc *jsonschema.Schema, doc json.RawMessage) (*Schema, error) {
	r, err := sc.Resolve(nil)
	if err != nil {
		return nil, err
	}
	return &Schema{doc: doc, resolved: r}, nil
}

// Object checks that doc is the schema of a JSON object ("type":
// "object"), as a tool's parameters must be: a step's args and a model's
// tool call are objects, and a model is given the schema as it is.
func Object(doc json.RawMessage) error {
	var top struct {
		Type any `json:"type"`
	}
	if err := json.Unmarshal(doc, &top); err != nil || !bytes.HasPrefix(bytes.TrimSpace(doc), []byte("{")) {
		return fmt.Errorf("must be a JSON Schema object, not %s", clip(doc))
	}
	switch top.Type {
	case "object":
		return nil
	case nil:
		return fmt.Errorf(`must describe an object: it says no "type" ("type": "object", which a model API requires)`)
	}
	tj, _ := json.Marshal(top.Type)
	return fmt.Errorf(`must describe an object ("type": "object"), not %s: use a struct or a map for the arguments`, tj)
}

// clip is doc shortened for an error (agentledger.Clip), "nothing" when empty.
func clip(doc json.RawMessage) string {
	if s := strings.TrimSpace(string(doc)); s != "" {
		return agentledger.Clip(s)
	}
	return "nothing"
}

// JSON is the schema as a document.
func (s *Schema) JSON() json.RawMessage { return s.doc }

// Check checks value (empty: {}) against the schema; the error is an
// *agentledger.InvalidError of field, which says what is wrong in words
// ("\"text\" is required", "must be an object, not a string").
func (s *Schema) Check(field string, value json.RawMessage) error {
	if len(bytes.TrimSpace(value)) == 0 {
		value = json.RawMessage(`{}`)
	}
	var instance any
	if err := json.Unmarshal(value, &instance); err != nil {
		return agentledger.Invalid(field, "is not JSON: %v", err)
	}
	if err := s.resolved.Validate(instance); err != nil {
		if msg := explain(s.resolved.Schema(), instance, ""); msg != "" {
			return agentledger.Invalid(field, "%s", msg)
		}
		return agentledger.Invalid(field, "does not fit its schema: %s", strings.TrimPrefix(err.Error(), "validating root: "))
	}
	return nil
}

// CheckDoc checks value against the schema written in doc.
func CheckDoc(doc json.RawMessage, field string, value json.RawMessage) error {
	s, err := Parse(doc)
	if err != nil {
		return fmt.Errorf("the schema of %s is unreadable: %w", field, err)
	}
	return s.Check(field, value)
}
