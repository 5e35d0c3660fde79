package flow_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/flow"
)

func TestParseTarget(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"http:https://Billing.Internal:8080": "http:https://billing.internal:8080",
		"http:https://api.example.com/":      "http:https://api.example.com:443",
		"http:http://10.0.0.1":               "http:http://10.0.0.1:80",
		"http:127.0.0.1:18449":               "http:https://127.0.0.1:18449", // bare, as the allow-list: https
		"http:billing.internal":              "http:https://billing.internal:443",
		"http://127.0.0.1:18449":             "http:http://127.0.0.1:18449", // the origin alone
		"https://Billing.Internal":           "http:https://billing.internal:443",
		"http:*":                             "http:*",
		"mcp:shop":                           "mcp:shop",
		"model:API.openai.com":               "model:api.openai.com",
		"slack-channel:C0123ABCD":            "slack-channel:C0123ABCD",
		"slack-channel:*":                    "slack-channel:*",
		" slack-workspace ":                  "slack-workspace",
	} {
		got, _, err := flow.ParseTarget(in)
		if err != nil || got != want {
			t.Errorf("ParseTarget(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for in, msg := range map[string]string{
		"ftp:x":                   `unknown kind "ftp"`,
		"smtp:*":                  `unknown kind "smtp"`,
		"slack-channel":           "must be KIND:NAME",
		"slack-channel:":          "must be KIND:NAME",
		"slack-channel:two words": "without spaces",
		"http:https://x/path":     "host[:port]",
		"http:ftp://x":            "host[:port]",
		"slack-workspace:T1":      "takes no name",
		"":                        "must be KIND:NAME",
	} {
		_, _, err := flow.ParseTarget(in)
		var ie *agentledger.InvalidError
		if !errors.As(err, &ie) || ie.Field != "target" || !strings.Contains(err.Error(), msg) {
			t.Errorf("ParseTarget(%q) = %v; want a target error with %q", in, err, msg)
		}
	}
}

// Every target a refusal suggests is accepted, and is what was meant.
func TestParseTargetSuggestions(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"http:https://x/path":          "http:https://x:443",
		"http:http://127.0.0.1:1/a?b":  "http:http://127.0.0.1:1",
		"http:ftp://files.internal:21": "http:https://files.internal:21",
		"http://u@127.0.0.1:18449":     "http:http://127.0.0.1:18449",
		"https://billing.internal/v1":  "http:https://billing.internal:443",
		"http:127.0.0.1:18449/x":       "http:https://127.0.0.1:18449",
		"127.0.0.1:18449":              "http:https://127.0.0.1:18449",
		"billing.internal:8080":        "http:https://billing.internal:8080",
		"http:host:99999":              "",
		"mcp:a/b":                      "",
	} {
		_, _, err := flow.ParseTarget(in)
		if err == nil {
			t.Errorf("ParseTarget(%q) accepted it", in)
			continue
		}
		_, got, found := strings.Cut(err.Error(), ", as in ")
		if got != want {
			t.Errorf("ParseTarget(%q) = %v; want the suggestion %q", in, err, want)
		}
		if !found {
			continue
		}
		if norm, _, err := flow.ParseTarget(got); err != nil || norm != got {
			t.Errorf("ParseTarget(%q), suggested for %q, = %q, %v", got, in, norm, err)
		}
	}
}

func TestParseRate(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]flow.Rate{
		"1/s":        {N: 1, Per: time.Second},
		"20/second":  {N: 20, Per: time.Second},
		"60/min":     {N: 60, Per: time.Minute},
		" 5/minute ": {N: 5, Per: time.Minute},
	} {
		got, err := flow.ParseRate(in)
		if err != nil || got != want {
			t.Errorf("ParseRate(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for in, msg := range map[string]string{
		"5":      "has no unit",
		"0/s":    "at least one call",
		"-1/min": "at least one call",
		"x/s":    "whole number",
		"5/h":    "unit must be s or min",
		"":       "has no unit",
	} {
		_, err := flow.ParseRate(in)
		var ie *agentledger.InvalidError
		if !errors.As(err, &ie) || ie.Field != "rate" || !strings.Contains(err.Error(), msg) {
			t.Errorf("ParseRate(%q) = %v; want a rate error with %q", in, err, msg)
		}
	}
	if e := (flow.Rate{N: 3, Per: time.Second}).Emission(); e != 333334*time.Microsecond {
		t.Errorf("3/s emission %v, want it rounded up to the microsecond", e)
	}
}

func TestBreakerJSON(t *testing.T) {
	b := flow.Breaker{Failures: 5, Window: time.Minute, Cooldown: 30 * time.Second}
	data, err := json.Marshal(b)
	if err != nil || string(data) != `{"failures":5,"window":"1m0s","cooldown":"30s"}` {
		t.Fatalf("%s %v", data, err)
	}
	var back flow.Breaker
	if err := json.Unmarshal(data, &back); err != nil || back != b {
		t.Fatalf("read back %+v %v", back, err)
	}
}
