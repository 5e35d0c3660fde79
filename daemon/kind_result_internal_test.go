package daemon

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/agentledger/agentledger"
)

type withChan struct {
	Done chan int `json:"done"`
}

type hidden struct {
	OK   string
	skip chan int //nolint:unused // unexported: not encoded
	Skip func()   `json:"-"`
}

// A result type that cannot encode as JSON is refused when the kind is
// made, naming what cannot, not when its first task has run; one that can
// (a time, raw JSON, a map with int keys, fields JSON skips) is taken.
func TestKindRefusesAResultThatCannotEncode(t *testing.T) {
	refused := func(name string, make func(), want string) {
		t.Helper()
		defer func() {
			r := recover()
			if msg, _ := r.(string); !strings.Contains(msg, want) {
				t.Errorf("%s: panic %v, want one saying %q", name, r, want)
			}
		}()
		make()
	}
	refused("chan", func() {
		Kind(func(context.Context, *agentledger.Task, struct{}) (chan int, error) { return nil, nil })
	}, "the result type chan int does not encode as JSON: chan int is a chan")
	refused("field", func() {
		Kind(func(context.Context, *agentledger.Task, struct{}) (*withChan, error) { return nil, nil })
	}, "field Done: chan int is a chan")
	refused("complex", func() {
		Kind(func(context.Context, *agentledger.Task, struct{}) ([]map[string]complex128, error) { return nil, nil })
	}, "complex128 is a complex128")
	refused("key", func() {
		Kind(func(context.Context, *agentledger.Task, struct{}) (map[[2]int]string, error) { return nil, nil })
	}, "has keys of type [2]int")

	Kind(func(context.Context, *agentledger.Task, struct{}) (time.Time, error) { return time.Time{}, nil })
	Kind(func(context.Context, *agentledger.Task, struct{}) (json.RawMessage, error) { return nil, nil })
	Kind(func(context.Context, *agentledger.Task, struct{}) (map[int]string, error) { return nil, nil })
	Kind(func(context.Context, *agentledger.Task, struct{}) (hidden, error) { return hidden{}, nil })
	Kind(func(context.Context, *agentledger.Task, struct{}) (any, error) { return nil, nil })
}
