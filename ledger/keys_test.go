package ledger_test

import (
	"encoding/json"
	"flag"
	"os"
	"testing"

	"github.com/agentledger/agentledger/ledger"
)

var update = flag.Bool("update", false, "rewrite testdata/keys.json")

// keyVector is a published golden vector: any implementation of the key
// derivation must reproduce EffectKey, DownstreamKey and ScopedDownstreamKey
// from the inputs.
type keyVector struct {
	Tenant        string `json:"tenant"`
	TaskID        int64  `json:"task_id"`
	Generation    int32  `json:"generation"`
	StepPath      string `json:"step_path"`
	Operation     string `json:"operation"`
	EffectKey     string `json:"effect_key"`
	Target        string `json:"target"`
	DownstreamKey string `json:"downstream_key"`
	// ScopedDownstreamKey is the key of a database whose installation id is
	// vectorScope (migration 00042).
	ScopedDownstreamKey string `json:"scoped_downstream_key"`
}

// vectorScope is the installation id the scoped vectors are made with.
const vectorScope = "6f1c2d3e-4a5b-4c6d-8e7f-9a0b1c2d3e4f"

func TestKeyGoldenVectors(t *testing.T) {
	t.Parallel()
	inputs := []keyVector{
		{Tenant: "default", TaskID: 1, Generation: 1, StepPath: "tool/0", Operation: "http_request", Target: "api.example.com"},
		{Tenant: "default", TaskID: 1, Generation: 2, StepPath: "tool/0", Operation: "http_request", Target: "api.example.com"},
		{Tenant: "default", TaskID: 1, Generation: 1, StepPath: "tool/1", Operation: "http_request", Target: "api.example.com"},
		{Tenant: "acme", TaskID: 1, Generation: 1, StepPath: "tool/0", Operation: "http_request", Target: "api.example.com"},
		{Tenant: "default", TaskID: 9007199254740993, Generation: 1, StepPath: "llm/3", Operation: "llm.chat", Target: "openai"},
		{Tenant: "default", TaskID: 42, Generation: 1, StepPath: "tool/3/call_abc123", Operation: "http_request", Target: "billing.internal:8443"},
		{Tenant: "default", TaskID: 42, Generation: 1, StepPath: "notify/on-failure", Operation: "slack.post", Target: "C024BE91L"},
		{Tenant: "t\"q\\", TaskID: 7, Generation: 1, StepPath: "tool/0", Operation: "é/op", Target: ""},
	}
	for i := range inputs {
		v := &inputs[i]
		v.EffectKey = ledger.EffectKey(v.Tenant, v.TaskID, v.Generation, v.StepPath, v.Operation)
		v.DownstreamKey = ledger.DownstreamKey(v.EffectKey, v.Target)
		v.ScopedDownstreamKey = ledger.ScopedDownstreamKey(vectorScope, v.EffectKey, v.Target)
	}
	if *update {
		b, _ := json.MarshalIndent(inputs, "", "  ")
		if err := os.WriteFile("testdata/keys.json", append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	raw, err := os.ReadFile("testdata/keys.json")
	if err != nil {
		t.Fatal(err)
	}
	var want []keyVector
	if err := json.Unmarshal(raw, &want); err != nil {
		t.Fatal(err)
	}
	if len(want) != len(inputs) {
		t.Fatalf("%d vectors on file, %d computed (run with -update after a deliberate change)", len(want), len(inputs))
	}
	seen := map[string]bool{}
	for i, w := range want {
		if inputs[i] != w {
			t.Errorf("vector %d:\n got  %+v\n want %+v", i, inputs[i], w)
		}
		if seen[w.EffectKey] {
			t.Errorf("vector %d: effect key collides with an earlier one", i)
		}
		seen[w.EffectKey] = true
	}
}

// A string that is not UTF-8 and its replacement character are different
// inputs (found by FuzzKeys): encoding/json writes both as U+FFFD.
func TestKeysOfInvalidUTF8(t *testing.T) {
	t.Parallel()
	if ledger.EffectKey("a\xff", 1, 1, "tool/0", "op") == ledger.EffectKey("a\uFFFD", 1, 1, "tool/0", "op") {
		t.Error("tenants a\\xff and a\\uFFFD share an effect key")
	}
	if ledger.EffectKey("a", 1, 1, "tool/\xfe", "op") == ledger.EffectKey("a", 1, 1, "tool/\xff", "op") {
		t.Error("step paths tool/\\xfe and tool/\\xff share an effect key")
	}
	if ledger.DownstreamKey("k", "h\xff") == ledger.DownstreamKey("k", "h\uFFFD") {
		t.Error("targets h\\xff and h\\uFFFD share a downstream key")
	}
}
