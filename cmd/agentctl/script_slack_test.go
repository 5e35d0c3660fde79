package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/rogpeppe/go-internal/testscript"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/agentledgertest/slackfake"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/notify"
	"github.com/agentledger/agentledger/notify/outbox"
	"github.com/agentledger/agentledger/notify/slack"
)

// scriptSlackToken is the token the scripts' fake Slack accepts.
const scriptSlackToken = "xoxb-good"

// scriptSlacks are the scripts' fake Slacks, one per script (by $WORK),
// each with channel "ops", made on first use.
var scriptSlacks sync.Map // work dir → *slackfake.Server

func scriptSlack(ts *testscript.TestScript) *slackfake.Server {
	if s, ok := scriptSlacks.Load(ts.Getenv("WORK")); ok {
		return s.(*slackfake.Server)
	}
	tb := ts.Value(tbKey{}).(testing.TB)
	s := slackfake.New(tb, scriptSlackToken)
	s.AddChannel("ops")
	scriptSlacks.Store(ts.Getenv("WORK"), s)
	tb.Cleanup(func() { scriptSlacks.Delete(ts.Getenv("WORK")) })
	return s
}

// cmdSlack drives the script's fake Slack:
//
//	slack dispatch TOKEN [PASSES]
//	                  deliver the due outbox events to it with the real
//	                  deliverer and Slack sink, signed with TOKEN (it accepts
//	                  xoxb-good): until none is due, or PASSES rounds
//	slack lose-answer the next post lands, and its answer is lost
//	slack messages    print its messages in channel ops, oldest first: the
//	                  first line of each and how often it was updated
func cmdSlack(ts *testscript.TestScript, neg bool, args []string) {
	usage := "usage: slack dispatch TOKEN [PASSES] | slack lose-answer | slack messages"
	if neg || len(args) == 0 {
		ts.Fatalf("%s", usage)
	}
	fake := scriptSlack(ts)
	switch {
	case args[0] == "dispatch" && (len(args) == 2 || len(args) == 3):
		passes := 0
		if len(args) == 3 {
			var err error
			passes, err = strconv.Atoi(args[2])
			ts.Check(err)
		}
		n := slackDispatch(ts, fake, args[1], passes)
		fmt.Fprintf(ts.Stdout(), "dispatched %d events\n", n)
	case args[0] == "lose-answer" && len(args) == 1:
		fake.DropAfterApply("chat.postMessage")
	case args[0] == "messages" && len(args) == 1:
		for _, m := range fake.Messages("ops") {
			fmt.Fprintf(ts.Stdout(), "message %q, updated %d times\n", strings.SplitN(m.Text, "\n", 2)[0], m.Updates)
		}
	default:
		ts.Fatalf("%s", usage)
	}
}

// slackDispatch delivers due events to fake with token, and returns how
// many it claimed.
func slackDispatch(ts *testscript.TestScript, fake *slackfake.Server, token string, passes int) int {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, ts.Getenv("DATABASE_URL"))
	ts.Check(err)
	defer pool.Close()
	sink, err := slack.New(slack.Config{Token: token, APIURL: fake.APIURL(), HTTPClient: fake.Client(),
		PerChannelInterval: -1, WorkspaceRate: -1})
	ts.Check(err)
	d, err := outbox.NewDispatcher(outbox.NewStore(pool), notify.NewDeliverer(ledger.New(pool), sink), outbox.Config{
		Owner: "script", Backoff: agentledger.Backoff{Base: time.Millisecond, Max: time.Millisecond}})
	ts.Check(err)
	total := 0
	for i := 0; passes == 0 || i < passes; i++ {
		n, err := d.RunOnce(ctx)
		ts.Check(err)
		total += n
		if n == 0 && passes == 0 {
			break
		}
		time.Sleep(2 * time.Millisecond) // past a retry's backoff
	}
	return total
}
