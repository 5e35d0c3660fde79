package agentledger

import (
	"encoding/json"
	"errors"
	"testing"
)

func TestTypeProblemQuotesWhatWasSent(t *testing.T) {
	var v struct {
		I32 int32   `json:"i32"`
		P   *int    `json:"p"`
		U8  uint8   `json:"u8"`
		S   string  `json:"s"`
		F   float64 `json:"f"`
	}
	for body, want := range map[string]string{
		`{"i32":99999999999}`: "99999999999 is out of range (-2147483648..2147483647)",
		`{"i32":1e2}`:         "must be an integer, not 1e2",
		`{"p":10.0}`:          "must be an integer, not 10.0",
		`{"u8":300}`:          "300 is out of range (0..255)",
		`{"u8":-1}`:           "must be a whole number, not -1",
		`{"s":5}`:             "must not be a JSON number",
		`{"i32":"5"}`:         "must not be a JSON string",
		`{"f":"x"}`:           "must not be a JSON string",
	} {
		var te *json.UnmarshalTypeError
		if err := json.Unmarshal([]byte(body), &v); !errors.As(err, &te) {
			t.Fatalf("%s: %v, want a type error", body, err)
		}
		if got := TypeProblem(te); got != want {
			t.Errorf("%s: %q, want %q", body, got, want)
		}
	}
}
