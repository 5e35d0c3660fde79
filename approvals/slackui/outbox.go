package slackui

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentledger/agentledger/approvals"
)

// The outbox events of a request, both of rule Rule(id): delivered in
// order, the post before its edit.
const (
	// EventAsk posts the request with its buttons.
	EventAsk = "approval"
	// EventDecided edits the posted request once it is decided.
	EventDecided = "approval_decided"
	// EventOutcome edits it again once the approved effect's outcome is
	// final: what the effect did.
	EventOutcome = "approval_outcome"
)

// Rule is the outbox rule of request id's events: it orders them (one
// task's events of a rule are delivered one at a time) and keys them.
func Rule(id int64) string { return "approval:" + strconv.FormatInt(id, 10) }

// DB is a pool or a transaction: what can begin a transaction.
type DB interface {
	approvals.DB
	Begin(ctx context.Context) (pgx.Tx, error)
}

// tellSQL writes request $5's post unless it has been written: the
// caller holds the request's lock.
const tellSQL = `/* slackui.tell */
INSERT INTO outbox (tenant, task_id, generation, attempt, event, rule, channel, payload)
SELECT $1, $2, $3, 0, '` + EventAsk + `', $4, $6, jsonb_build_object('request', $5::bigint)
WHERE NOT EXISTS (SELECT FROM outbox WHERE task_id = $2 AND rule = $4 AND event = '` + EventAsk + `')`

// lockSQL serialises the writes of one request's events (the gate may
// tell of it from two attempts, a stale and a new one, at once).
const lockSQL = `/* slackui.lock */ SELECT pg_advisory_xact_lock(hashtextextended($1, 35))`

// Tell writes the outbox event that posts r to channel, once per request
// whatever the number of calls: approvals.Gate.Requested.
func Tell(ctx context.Context, db DB, r approvals.Request, channel string) error {
	rule := Rule(r.ID)
	return pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, lockSQL, rule); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, tellSQL, r.Tenant, r.TaskID, r.Generation, rule, r.ID, channel); err != nil {
			return fmt.Errorf("approval request %d: its Slack post: %w", r.ID, err)
		}
		return nil
	})
}

// decidedSQL writes the edit of the post of task $1's request of rule
// $2, when it was posted and its edit is not written yet.
const decidedSQL = `/* slackui.decided */
INSERT INTO outbox (tenant, task_id, generation, attempt, event, rule, channel, payload)
SELECT o.tenant, o.task_id, o.generation, o.attempt, '` + EventDecided + `', o.rule, o.channel, o.payload
FROM outbox o
WHERE o.task_id = $1 AND o.rule = $2 AND o.event = '` + EventAsk + `'
	AND NOT EXISTS (SELECT FROM outbox p WHERE p.task_id = $1 AND p.rule = $2 AND p.event = '` + EventDecided + `')`

// decided writes the edit of r's post in tx, the transaction that decided
// it (which holds its row).
func decided(ctx context.Context, tx pgx.Tx, r approvals.Request) error {
	if _, err := tx.Exec(ctx, decidedSQL, r.TaskID, Rule(r.ID)); err != nil {
		return fmt.Errorf("approval request %d: editing its Slack post: %w", r.ID, err)
	}
	return nil
}

// outcomeSQL writes the last edit of the post of task $1's request of
// rule $2, saying what the approved effect did ($3), when it was posted
// and that edit is not written yet.
const outcomeSQL = `/* slackui.outcome */
INSERT INTO outbox (tenant, task_id, generation, attempt, event, rule, channel, payload)
SELECT o.tenant, o.task_id, o.generation, o.attempt, '` + EventOutcome + `', o.rule, o.channel,
	o.payload || jsonb_build_object('outcome', $3::text)
FROM outbox o
WHERE o.task_id = $1 AND o.rule = $2 AND o.event = '` + EventAsk + `'
	AND NOT EXISTS (SELECT FROM outbox p WHERE p.task_id = $1 AND p.rule = $2 AND p.event = '` + EventOutcome + `')`

// TellOutcome writes the edit that tells what r's approved effect did
// (outcome, a line), once per request however often it is called:
// approvals.Gate.Performed. The decision's edit is written first when
// Follow has not written it yet, so the post reads decision, then
// outcome, in that order.
func TellOutcome(ctx context.Context, db DB, r approvals.Request, outcome string) error {
	rule := Rule(r.ID)
	return pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, lockSQL, rule); err != nil {
			return err
		}
		if err := decided(ctx, tx, r); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, outcomeSQL, r.TaskID, rule, outcome); err != nil {
			return fmt.Errorf("approval request %d: telling its outcome in Slack: %w", r.ID, err)
		}
		return nil
	})
}

// followSQL writes the edit of every posted request decided within $1
// whose edit is not written: decisions made elsewhere (the console,
// agentctl, the API), timeouts, and cancels. Under the follow lock.
const followSQL = `/* slackui.follow */
INSERT INTO outbox (tenant, task_id, generation, attempt, event, rule, channel, payload)
SELECT o.tenant, o.task_id, o.generation, o.attempt, '` + EventDecided + `', o.rule, o.channel, o.payload
FROM approvals a
JOIN outbox o ON o.task_id = a.task_id AND o.rule = 'approval:' || a.id AND o.event = '` + EventAsk + `'
WHERE a.state <> 'pending' AND a.decided_at > now() - $1::interval
	AND NOT EXISTS (SELECT FROM outbox p WHERE p.task_id = a.task_id AND p.rule = o.rule AND p.event = '` + EventDecided + `')`

// FollowWindow is how far back Follow looks for decided requests: the
// outbox's default retention, beyond which the post's event is gone.
const FollowWindow = 7 * 24 * time.Hour

// Follow writes the edits of the posts of requests decided since window
// ago by anything but a Slack click (which writes its own), and returns
// how many. Daemons may run it at once: they take turns.
func Follow(ctx context.Context, db DB, window time.Duration) (int64, error) {
	var n int64
	err := pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, lockSQL, "approvals follow"); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, followSQL, window)
		n = tag.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("approvals: editing decided requests' Slack posts: %w", err)
	}
	return n, nil
}
