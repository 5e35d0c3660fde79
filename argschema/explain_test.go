package argschema_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/argschema"
)

// A value that does not fit is refused with what is wrong in words: the
// path of the value at fault, what it must be and what it is.
func TestCheckSaysWhatIsWrong(t *testing.T) {
	t.Parallel()
	schema := json.RawMessage(`{"type":"object","additionalProperties":false,"required":["kind","text"],"properties":{
		"kind":{"type":"string","pattern":"^[a-z]+$","description":"a lower-case word"},
		"text":{"type":"string","minLength":1,"maxLength":5},
		"mode":{"enum":["fast","slow"]},
		"n":{"type":"integer","minimum":0,"maximum":100},
		"tags":{"type":"array","maxItems":2,"items":{"type":"string"}},
		"meta":{"type":"object","additionalProperties":{"type":"string"}},
		"opt":{"type":["string","null"]},
		"either":{"anyOf":[{"type":"string"},{"type":"integer"}]}}}`)
	for value, want := range map[string]string{
		`"x"`:                                    "must be an object, not a string",
		`null`:                                   "must be an object, not null",
		`[1]`:                                    "must be an object, not an array",
		`{}`:                                     `"kind" and "text" are required`,
		`{"kind":"a"}`:                           `"text" is required`,
		`{"kind":"a","text":"t","x":1}`:          `"x" is unknown (known: either, kind, meta, mode, n, opt, tags, text)`,
		`{"kind":"a","text":5}`:                  `"text" must be a string, not a number`,
		`{"kind":"a","text":""}`:                 `"text" must not be empty`,
		`{"kind":"a","text":"toolong"}`:          `"text" must be at most 5 characters long, not 7`,
		`{"kind":"A b","text":"t"}`:              `"kind" is "A b", which does not match ^[a-z]+$ (a lower-case word)`,
		`{"kind":"a","text":"t","mode":"slo"}`:   `"mode" must be one of fast, slow, not "slo"`,
		`{"kind":"a","text":"t","n":500}`:        `"n" must be at most 100, not 500`,
		`{"kind":"a","text":"t","n":1.5}`:        `"n" must be an integer, not 1.5`,
		`{"kind":"a","text":"t","tags":["a",2]}`: `"tags[1]" must be a string, not a number`,
		`{"kind":"a","text":"t","tags":["a","b","c"]}`: `"tags" must have at most 2 items, not 3`,
		`{"kind":"a","text":"t","meta":{"k":true}}`:    `"meta.k" must be a string, not a boolean`,
		`{"kind":"a","text":"t","opt":1}`:              `"opt" must be a string or null, not a number`,
		// Beyond the keywords explained: the validator's own words.
		`{"kind":"a","text":"t","either":true}`: "does not fit its schema: validating /properties/either: anyOf: ",
	} {
		err := argschema.CheckDoc(schema, "arguments", json.RawMessage(value))
		var ie *agentledger.InvalidError
		if !errors.As(err, &ie) || ie.Field != "arguments" || !prefixed(ie.Problem, want) {
			t.Errorf("%s: %v, want arguments: %s", value, err, want)
		}
	}
	if err := argschema.CheckDoc(schema, "arguments", json.RawMessage(`{"kind":"a","text":"t","opt":null}`)); err != nil {
		t.Errorf("a value that fits: %v", err)
	}
}

// prefixed reports whether got is want, or starts with it when want ends
// with a space (the validator's message goes on).
func prefixed(got, want string) bool {
	if want != "" && want[len(want)-1] == ' ' {
		return len(got) >= len(want) && got[:len(want)] == want
	}
	return got == want
}

// Bounds and values are written as a person would: whole numbers in full.
func TestNumbersInFull(t *testing.T) {
	t.Parallel()
	err := argschema.CheckDoc(json.RawMessage(`{"type":"object","properties":{"ms":{"type":"integer","maximum":3600000}}}`),
		"payload", json.RawMessage(`{"ms":5000000}`))
	if err == nil || !strings.Contains(err.Error(), "must be at most 3600000, not 5000000") {
		t.Fatalf("got %v", err)
	}
	err = argschema.CheckDoc(json.RawMessage(`{"type":"object","properties":{"r":{"type":"number","minimum":0.5}}}`),
		"payload", json.RawMessage(`{"r":1e-7}`))
	if err == nil || !strings.Contains(err.Error(), "must be at least 0.5, not 1e-07") {
		t.Fatalf("got %v", err)
	}
}
