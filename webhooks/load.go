package webhooks

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentledger/agentledger"
)

// sourceJSON is one source in the sources file (see the package comment).
type sourceJSON struct {
	Name            string      `json:"name"`
	Type            string      `json:"type"`
	Secret          string      `json:"secret,omitempty"`
	SecretEnv       string      `json:"secret_env,omitempty"`
	SecretFile      string      `json:"secret_file,omitempty"`
	Header          string      `json:"header,omitempty"`
	DeliveryHeader  string      `json:"delivery_header,omitempty"`
	EventHeader     string      `json:"event_header,omitempty"`
	TimestampHeader string      `json:"timestamp_header,omitempty"`
	Tenant          string      `json:"tenant,omitempty"`
	Queue           string      `json:"queue,omitempty"`
	Kind            string      `json:"kind,omitempty"`
	Priority        int16       `json:"priority,omitempty"`
	MaxAttempts     int32       `json:"max_attempts,omitempty"`
	Payload         string      `json:"payload,omitempty"`
	Signal          *signalJSON `json:"signal,omitempty"`
}

// sourceFields says what a source holds, for an unknown field's error:
// the task a delivery queues is given by the source's own fields.
const sourceFields = "a source has name, type, secret, secret_env or secret_file, header, delivery_header, event_header, " +
	"timestamp_header, and the task it queues as tenant, queue, kind, priority, max_attempts and payload, or a signal"

// LoadSources reads the sources file at path: a JSON array of sources,
// each with its secret inline ("secret"), in an environment variable
// ("secret_env") or in a file ("secret_file", relative to path's
// directory; surrounding white space is ignored). It validates every
// source as New does. Errors name the file, the source and the field,
// never a secret.
func LoadSources(path string) ([]Source, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("webhooks: reading the sources file: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	var raws []json.RawMessage
	if err := dec.Decode(&raws); err != nil {
		return nil, fmt.Errorf("webhooks: %s: %w", path, jsonError(err, raw))
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("webhooks: %s: %w: trailing data after the array of sources", path, agentledger.ErrInvalid)
	}
	// Each source on its own, so that an error names it.
	entries := make([]sourceJSON, len(raws))
	for i, r := range raws {
		d := json.NewDecoder(bytes.NewReader(r))
		d.DisallowUnknownFields()
		if err := d.Decode(&entries[i]); err != nil {
			var named struct{ Name string }
			_ = json.Unmarshal(r, &named) // for the message only
			err = jsonError(err, r)
			if strings.Contains(err.Error(), "unknown field") {
				err = fmt.Errorf("%w (%s)", err, sourceFields)
			}
			return nil, fmt.Errorf("webhooks: %s: %w", path, entryError(i, named.Name, err))
		}
	}
	out := make([]Source, 0, len(entries))
	seen := map[string]bool{}
	for i, e := range entries {
		s := Source{
			Name: e.Name, Type: e.Type,
			Header: e.Header, DeliveryHeader: e.DeliveryHeader, EventHeader: e.EventHeader,
			TimestampHeader: e.TimestampHeader,
			Tenant:          e.Tenant, Queue: e.Queue, Kind: e.Kind,
			Priority: e.Priority, MaxAttempts: e.MaxAttempts, Payload: e.Payload,
		}
		secret, err := e.secret(filepath.Dir(path))
		if err == nil {
			s.Secret = secret
			s.Signal, err = e.Signal.toMap()
		}
		if err == nil {
			err = s.normalize()
		}
		if err != nil {
			return nil, fmt.Errorf("webhooks: %s: %w", path, entryError(i, e.Name, err))
		}
		if seen[s.Name] {
			return nil, fmt.Errorf("webhooks: %s: %w", path, entryError(i, e.Name, agentledger.Invalid("name", "%q is used by another source", s.Name)))
		}
		seen[s.Name] = true
		out = append(out, s)
	}
	return out, nil
}

// secret resolves the entry's secret; dir resolves a relative secret_file.
func (e *sourceJSON) secret(dir string) (string, error) {
	n := 0
	for _, v := range []string{e.Secret, e.SecretEnv, e.SecretFile} {
		if v != "" {
			n++
		}
	}
	switch {
	case n == 0:
		return "", agentledger.Invalid("secret", `is required: set "secret", "secret_env" or "secret_file"`)
	case n > 1:
		return "", agentledger.Invalid("secret", `set only one of "secret", "secret_env" and "secret_file"`)
	case e.Secret != "":
		return e.Secret, nil
	case e.SecretEnv != "":
		v, ok := os.LookupEnv(e.SecretEnv)
		if !ok {
			return "", agentledger.Invalid("secret_env", "$%s is not set", e.SecretEnv)
		}
		if v == "" {
			return "", agentledger.Invalid("secret_env", "$%s is empty", e.SecretEnv)
		}
		return v, nil
	}
	p := e.SecretFile
	if !filepath.IsAbs(p) {
		p = filepath.Join(dir, p)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err // the path is named once, below
		}
		return "", agentledger.Invalid("secret_file", "reading %s: %v", p, err)
	}
	v := strings.TrimSpace(string(b))
	if v == "" {
		return "", agentledger.Invalid("secret_file", "%s is empty", p)
	}
	return v, nil
}

// entryError names entry i (and its name, if it has a valid one) in err.
func entryError(i int, name string, err error) error {
	if name != "" && sourceName.MatchString(name) {
		return fmt.Errorf("source %d (%q): %w", i, name, err)
	}
	return fmt.Errorf("source %d: %w", i, err)
}

// jsonError describes a decoding error by position, field and type: a
// syntax error's message quotes the offending character, which could be
// part of a secret.
func jsonError(err error, raw []byte) error {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		line, col := position(raw, se.Offset)
		return fmt.Errorf("%w: malformed JSON at line %d, column %d", agentledger.ErrInvalid, line, col)
	case errors.As(err, &te):
		return fmt.Errorf("%w: %s: a JSON %s where %s belongs", agentledger.ErrInvalid, te.Field, te.Value, te.Type)
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return fmt.Errorf("%w: the file ends before the array of sources does", agentledger.ErrInvalid)
	}
	// Unknown fields: the message names the field.
	return fmt.Errorf("%w: %v", agentledger.ErrInvalid, err)
}

// position turns a byte offset into a 1-based line and column.
func position(raw []byte, off int64) (line, col int) {
	if off > int64(len(raw)) {
		off = int64(len(raw))
	}
	before := raw[:off]
	line = 1 + bytes.Count(before, []byte("\n"))
	col = int(off) - (bytes.LastIndexByte(before, '\n') + 1)
	return line, col
}
