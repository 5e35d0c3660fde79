package canonjson

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/agentledger/agentledger"
)

// DuplicateKeyError is a document whose object gives a key twice: two
// readings of one document (encoding/json keeps the last, others the
// first), which canonical JSON cannot make one.
type DuplicateKeyError struct{ Key string }

func (e *DuplicateKeyError) Error() string {
	return fmt.Sprintf("canonjson: duplicate object key %q", agentledger.Clip(e.Key))
}

// Reason says what is wrong with a document err refused, for its sender:
// without this package's name, and a key given twice cut to a readable
// length.
func Reason(err error) string {
	var dup *DuplicateKeyError
	if errors.As(err, &dup) {
		return fmt.Sprintf("an object gives the key %q twice", agentledger.Clip(dup.Key))
	}
	return strings.TrimPrefix(err.Error(), "canonjson: ")
}

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
