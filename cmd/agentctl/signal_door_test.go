package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/internal/test/doorcases"
	"github.com/agentledger/agentledger/internal/test/testenv"
	"github.com/agentledger/agentledger/waits"
)

// agentctl signal is an entrance of the signal door (package admit) as
// the operator's: every rule of doorcases' signal cases put to it, the
// outcome read off its exit code, the argument or flag its refusal names
// and its JSON output.
func TestSignalThroughTheDoor(t *testing.T) {
	t.Parallel()
	e := testenv.New(t)
	url := e.DB.Config().ConnString()
	for _, c := range doorcases.SignalCases {
		want, ok := c.Want["agentctl"]
		if !ok {
			continue
		}
		t.Run(c.Case, func(t *testing.T) {
			key := c.Key
			if key != "" {
				key += "/agentctl"
			}
			if c.Wait {
				task := e.Enqueue(claims.EnqueueParams{Tenant: "acme", Queue: "waits", Kind: "steps"})
				if _, err := waits.NewStore(e.DB).Await(context.Background(), waits.Wait{TaskID: task.ID, Generation: 1,
					Step: "wait_for_signal/0", Tenant: "acme", Kind: waits.KindSignal, Signal: c.Name, Key: key}, nil, time.Hour); err != nil {
					t.Fatal(err)
				}
			}
			args := []string{"signal", "-o", "json", "--tenant", "acme", "--", c.Name, key}
			if c.Payload != "" {
				args = append(args[:5], append([]string{"--payload", c.Payload}, args[5:]...)...)
			}
			if c.Tenant != "" {
				args[4] = c.Tenant
			}
			code, out, errOut := agentctlAt(url, args...)
			var err error
			var sig *waits.Signal
			switch code {
			case 0:
				var res signalResult
				if jerr := json.Unmarshal([]byte(out), &res); jerr != nil {
					t.Fatalf("%s: %v", out, jerr)
				}
				sig = &res.Signal
			case 2:
				field, problem, _ := strings.Cut(strings.TrimPrefix(errOut, "agentctl: "), ": ")
				err = agentledger.Invalid(field, "%s", problem)
			default:
				t.Fatalf("exit %d\n%s%s", code, out, errOut)
			}
			if got := doorcases.SignalOutcome(sig, err); got != want {
				t.Errorf("agentctl: %s, want %s (%s)", got, want, errOut)
			}
		})
	}
}
