package main

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentledger/agentledger/agentledgertest/downstream"
	"github.com/agentledger/agentledger/agentledgertest/fakeopenai"
	"github.com/agentledger/agentledger/agentledgertest/slackfake"
	"github.com/agentledger/agentledger/approvals"
	"github.com/agentledger/agentledger/client"
)

// decideApprovals decides, as an operator's agentctl would, every pending
// approval request once it is after old: approves it, or denies it when
// its task was offered as one to deny. It polls: a request's creation
// signals nothing outside agentd.
func decideApprovals(ctx context.Context, pool *pgxpool.Pool, st *ldState, after time.Duration) error {
	gates := approvals.NewStore(pool)
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		pending, err := gates.List(ctx, approvals.ListParams{Limit: 1000})
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("listing approval requests: %w", err)
		}
		for _, r := range pending {
			if time.Since(r.RequestedAt) < after {
				break // oldest first: the rest are younger
			}
			st.mu.Lock()
			deny, ours := st.deny[r.TaskID]
			st.mu.Unlock()
			if !ours {
				continue // the insert's answer has not come back yet
			}
			if _, _, err := gates.Decide(ctx, approvals.Decision{ID: r.ID, Approve: !deny, By: "longday", Via: "agentctl"}); err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return fmt.Errorf("deciding approval request %d: %w", r.ID, err)
			}
			st.mu.Lock()
			delete(st.deny, r.TaskID)
			st.mu.Unlock()
			st.decided.Add(1)
		}
	}
}

// sendSignals sends each signal task's signal, as a payment provider's
// callback would, after its delay: over the database client, under the
// task's key as idempotency key.
func sendSignals(ctx context.Context, pool *pgxpool.Pool, st *ldState) error {
	c := client.Database(pool, "")
	for {
		var s ldSignalDue
		select {
		case <-ctx.Done():
			return nil
		case s = <-st.signals:
		}
		if wait := time.Until(s.at); wait > 0 {
			tm := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				tm.Stop()
				return nil
			case <-tm.C:
			}
		}
		if _, err := c.Send(ctx, client.Signal{Name: ldSignal, Key: s.key, Payload: json.RawMessage(`{"amount":100}`),
			IdempotencyKey: s.key}); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("sending signal %s: %w", s.key, err)
		}
		st.signaled.Add(1)
	}
}

// checkEffects counts what reached the fakes: the downstream's business
// effects against those the finished tasks account for, any body
// performed as two effects, and the Slack posts of the notify rule.
func checkEffects(down *downstream.Server, slack *slackfake.Server, model *fakeopenai.Server, notifyCh, approvalsCh string,
	res LongdayResult) effectChecks {
	c := effectChecks{Effects: down.Effects(), Hits: down.Hits(), Refused: down.Refused(), ModelCalls: model.Calls()}
	for class, n := range res.Finished {
		c.Expected += int64(ldEffects[class] * (n - res.Unexp[class]))
	}
	for _, n := range down.EffectsByBody() {
		if n > 1 {
			c.DupBodies++
		}
	}
	seen := map[string]int{}
	for _, m := range slack.Messages(notifyCh) {
		c.Posts++
		key := m.Text
		if m.Metadata != nil {
			if k, ok := m.Metadata.EventPayload["key"].(string); ok {
				key = k
			}
		}
		if seen[key]++; seen[key] == 2 {
			c.DupPosts++
		}
	}
	c.Expected2 = res.Finished[classNotify] - res.Unexp[classNotify]
	c.ApprovalPosts = len(slack.Messages(approvalsCh))
	return c
}
