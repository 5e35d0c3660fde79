package canonjson

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
)

// Marshal returns the canonical form of the JSON document in: one pass
// over the bytes (scan.go), which a request hash costs at every effect.
func Marshal(in []byte) ([]byte, error) {
	c := canonicalizer{in: in, out: make([]byte, 0, len(in))}
	c.space()
	if c.pos == len(in) {
		return nil, errors.New("canonjson: EOF")
	}
	if err := c.value(0); err != nil {
		return nil, err
	}
	c.space()
	if c.pos != len(in) {
		return nil, errors.New("canonjson: trailing data after JSON value")
	}
	return c.out, nil
}

// MarshalValue encodes v with encoding/json and returns its canonical form.
func MarshalValue(v any) ([]byte, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("canonjson: %w", err)
	}
	return Marshal(raw)
}

// Hash returns the SHA-256 of the canonical form of the JSON document in.
func Hash(in []byte) ([]byte, error) {
	c, err := Marshal(in)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(c)
	return sum[:], nil
}

// HashValue returns the SHA-256 of the canonical form of v.
func HashValue(v any) ([]byte, error) {
	c, err := MarshalValue(v)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(c)
	return sum[:], nil
}
