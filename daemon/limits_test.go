package daemon_test

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/agentledger/agentledger/daemon"
	"github.com/agentledger/agentledger/flow"
	"github.com/agentledger/agentledger/internal/testdaemon"
	"github.com/agentledger/agentledger/internal/testdb"
)

// The configured limits are stored at start as source "config", replacing
// those targets' limits and leaving the others; a bad one stops the start.
func TestConfiguredLimitsStoredAtStart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := testdb.URL(t)
	s := flow.NewStore(testdb.Open(t, url))
	for _, target := range []string{"slack-channel:*", "mcp:shop"} {
		if _, err := s.Put(ctx, flow.Limit{Target: target, Rate: flow.Rate{N: 9, Per: time.Minute}}); err != nil {
			t.Fatal(err)
		}
	}
	cfg := daemon.Config{DatabaseURL: url, Logger: quiet(), Stdout: io.Discard, NoCron: true, NoJanitor: true, NoDispatch: true,
		Limits: []flow.Limit{{Target: "slack-channel:*", Rate: flow.Rate{N: 1, Per: time.Second}, Burst: 2}}}
	testdaemon.Run(t, daemon.New(cfg))

	ls, err := s.List(ctx)
	if err != nil || len(ls) != 2 {
		t.Fatalf("limits %+v, %v", ls, err)
	}
	if ls[0].Target != "mcp:shop" || ls[0].Source != flow.SourceOperator || ls[0].Rate.String() != "9/min" {
		t.Errorf("the operator's limit changed: %+v", ls[0])
	}
	if ls[1].Target != "slack-channel:*" || ls[1].Source != flow.SourceConfig || ls[1].Rate.String() != "1/s" || ls[1].Burst != 2 {
		t.Errorf("the configured limit: %+v", ls[1])
	}

	cfg.Limits = []flow.Limit{{Target: "smtp:mail", Rate: flow.Rate{N: 1, Per: time.Second}}}
	runCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	err = daemon.New(cfg).Run(runCtx)
	var ce *daemon.ConfigError
	if !errors.As(err, &ce) {
		t.Fatalf("a bad limit: %v, want a configuration error", err)
	}
	t.Log(err)
}
