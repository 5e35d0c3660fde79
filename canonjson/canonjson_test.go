package canonjson

import (
	"encoding/hex"
	"encoding/json"
	"os"
	"testing"
)

// vector is one published golden test vector: other implementations of the
// request hash must produce the same Canonical and SHA256 for Input.
type vector struct {
	Name      string `json:"name"`
	Input     string `json:"input"`
	Canonical string `json:"canonical"`
	SHA256    string `json:"sha256"`
}

func TestGoldenVectors(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("testdata/vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	var vs []vector
	if err := json.Unmarshal(raw, &vs); err != nil {
		t.Fatal(err)
	}
	if len(vs) < 8 {
		t.Fatalf("only %d vectors", len(vs))
	}
	for _, v := range vs {
		t.Run(v.Name, func(t *testing.T) {
			got, err := Marshal([]byte(v.Input))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != v.Canonical {
				t.Errorf("canonical = %s, want %s", got, v.Canonical)
			}
			sum, err := Hash([]byte(v.Input))
			if err != nil {
				t.Fatal(err)
			}
			if hex.EncodeToString(sum) != v.SHA256 {
				t.Errorf("sha256 = %x, want %s", sum, v.SHA256)
			}
		})
	}
}

func TestRejects(t *testing.T) {
	t.Parallel()
	for _, in := range []string{``, `{`, `{"a":1}{}`, `{"a":1,"a":2}`, `[{"x":{"y":1,"y":1}}]`, `nul`} {
		if _, err := Marshal([]byte(in)); err == nil {
			t.Errorf("Marshal(%q) = nil error, want an error", in)
		}
	}
}

func TestSameMeaningSameHash(t *testing.T) {
	t.Parallel()
	a, _ := Hash([]byte(`{"b": [1, 2.50, {"d": null, "c": true}], "a": "x"}`))
	b, _ := Hash([]byte("{\"a\":\"x\",\n \"b\":[1,2.50,{\"c\":true,\"d\":null}]}"))
	if hex.EncodeToString(a) != hex.EncodeToString(b) {
		t.Fatal("reordered keys and whitespace changed the hash")
	}
	c, _ := Hash([]byte(`{"a":"x","b":[1,2.5,{"c":true,"d":null}]}`))
	if hex.EncodeToString(a) == hex.EncodeToString(c) {
		t.Fatal("2.50 and 2.5 must hash differently: numbers are kept as written")
	}
}
