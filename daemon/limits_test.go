package daemon

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/agentledger/agentledger/flow"
	"github.com/agentledger/agentledger/internal/test/testdb"
)

// With Slack, agentd stores the fleet's pace of every channel where no
// limit is set, and never replaces an operator's or the configuration's.
func TestSlackChannelDefaultLimit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	store := flow.NewStore(db)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))

	if err := storeLimits(ctx, db, &Config{}, log); err != nil {
		t.Fatal(err)
	}
	if ls, err := store.List(ctx); err != nil || len(ls) != 0 {
		t.Fatalf("without Slack: limits %v %v, want none", ls, err)
	}

	slack := &Config{Notify: Notifications{SlackToken: "xoxb-test"}}
	if err := storeLimits(ctx, db, slack, log); err != nil {
		t.Fatal(err)
	}
	l, err := store.Get(ctx, "slack-channel:*")
	if err != nil || l.Source != flow.SourceDefault || l.Rate != (flow.Rate{N: 50, Per: time.Minute}) || l.Burst != 1 {
		t.Fatalf("default %+v %v, want 50/min burst 1 from agentd", l, err)
	}

	if _, err := store.Put(ctx, flow.Limit{Target: "slack-channel:*", Rate: flow.Rate{N: 2, Per: time.Second}}); err != nil {
		t.Fatal(err)
	}
	if err := storeLimits(ctx, db, slack, log); err != nil {
		t.Fatal(err)
	}
	if l, err := store.Get(ctx, "slack-channel:*"); err != nil || l.Source != flow.SourceOperator || l.Rate.N != 2 {
		t.Fatalf("after a restart: %+v %v, want the operator's 2/s kept", l, err)
	}
}

// A limit stored on a Slack channel's name (before a name was refused)
// paces nothing: a start says so.
func TestStartWarnsOfALimitOnAChannelName(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	if _, err := db.Exec(ctx, `INSERT INTO flow_limits (target, rate_n, rate_per_seconds, source) VALUES ('slack-channel:#ops', 1, 60, 'operator')`); err != nil {
		t.Fatal(err)
	}
	var logged bytes.Buffer
	if err := storeLimits(ctx, db, &Config{}, slog.New(slog.NewTextHandler(&logged, nil))); err != nil {
		t.Fatal(err)
	}
	if l := logged.String(); !strings.Contains(l, "a stored limit paces nothing") || !strings.Contains(l, "agentctl limit rm slack-channel:#ops") {
		t.Fatalf("log:\n%s", l)
	}
}
