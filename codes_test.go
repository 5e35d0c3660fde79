package agentledger

import (
	"context"
	"errors"
	"fmt"
	"testing"
)

// Every code has one kind with an answer for each front end, and an error
// finds its kind however it is wrapped.
func TestErrorVocabulary(t *testing.T) {
	t.Parallel()
	for _, k := range Kinds() {
		if k.Title == "" || k.Status < 400 || k.Status > 599 || (k.Exit != exitUsage && k.Exit != exitFailed) {
			t.Errorf("%s: incomplete kind %+v", k.Code, k)
		}
		err := fmt.Errorf("context: %w", Errorf(k.Code, "something about %d", 7))
		if got := KindOf(err).Code; got != k.Code {
			t.Errorf("a wrapped %s error is of kind %s", k.Code, got)
		}
		if k.sentinel != nil {
			if !errors.Is(err, k.sentinel) {
				t.Errorf("a %s error does not match its sentinel %v", k.Code, k.sentinel)
			}
			if got := KindOf(fmt.Errorf("x: %w", k.sentinel)).Code; got != k.Code {
				t.Errorf("sentinel %v is of kind %s, want %s", k.sentinel, got, k.Code)
			}
		}
	}
	if got := KindOf(errors.New("boom")).Code; got != CodeInternal {
		t.Errorf("an unknown error is of kind %s", got)
	}
	if got := KindOf(Invalid("limit", "must be positive")); got.Code != CodeInvalid || got.Exit != exitUsage {
		t.Errorf("an invalid input is %+v", got)
	}
	if got := KindOf(fmt.Errorf("submit: %w", context.DeadlineExceeded)).Code; got != CodeTimeout {
		t.Errorf("a deadline is of kind %s", got)
	}
	if err := Errorf(CodeConflict, "task %d is already %s", 7, "succeeded"); err.Error() != "task 7 is already succeeded" {
		t.Errorf("message %q: a coded error reads as its sentence, with no tail", err)
	}
}
