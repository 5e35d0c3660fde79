// Package argschema is the JSON Schema of a tool's arguments or a typed
// kind's payload: generated from a Go type (google/jsonschema-go, the
// library the MCP Go SDK uses), and the check of a JSON value against one,
// whose error is an agentledger.InvalidError.
package argschema

import (
	"bytes"
	"encoding/json"
	"fmt"
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
