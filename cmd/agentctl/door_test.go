package main

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/grants"
	"github.com/agentledger/agentledger/internal/test/doorcases"
	"github.com/agentledger/agentledger/internal/test/testenv"
)

// agentctl submit is an entrance of the door (package admit) as the
// operator's: every rule of doorcases put to it, the outcome read off its
// exit code, the flag its refusal names and its JSON output.
func TestSubmitThroughTheDoor(t *testing.T) {
	t.Parallel()
	e := testenv.New(t)
	url := e.DB.Config().ConnString()
	doorcases.Prepare(t, e.DB, grants.NewStore(e.DB))
	fields := map[string]string{"--kind": "kind", "--payload": "payload", "--priority": "priority",
		"--idempotency-key": "submission_key", "--run-at": "run_at", "payload": "payload"}
	for _, c := range doorcases.Cases {
		want, ok := c.Want["agentctl"]
		if !ok {
			continue
		}
		t.Run(c.Name, func(t *testing.T) {
			args := []string{"submit", "-o", "json", "--tenant", "acme", "--kind", c.Kind, "--priority", strconv.Itoa(c.Priority)}
			if c.Payload != "" {
				args = append(args, "--payload", c.Payload)
			}
			if !c.RunAt.IsZero() {
				args = append(args, "--run-at", c.RunAt.Format(time.RFC3339))
			}
			if c.Key != "" {
				args = append(args, "--idempotency-key", c.Key)
			}
			code, out, errOut := agentctlAt(url, args...)
			var err error
			var task *agentledger.Task
			switch code {
			case 0:
				var res submitResult
				if jerr := json.Unmarshal([]byte(out), &res); jerr != nil {
					t.Fatalf("%s: %v", out, jerr)
				}
				task = res.Task
			case 2:
				flag, problem, _ := strings.Cut(strings.TrimPrefix(errOut, "agentctl: "), ": ")
				err = agentledger.Invalid(fields[flag], "%s", problem)
			default:
				t.Fatalf("exit %d\n%s%s", code, out, errOut)
			}
			if got := doorcases.Outcome(task, err); got != want {
				t.Errorf("agentctl: %s, want %s (%s)", got, want, errOut)
			}
		})
	}
}
