package approvals

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/dbaway"
)

// Decision is one person's answer to a request.
type Decision struct {
	ID int64
	// Tenant, when set, must own the request's task (the API's caller).
	Tenant  string
	Approve bool
	// By is who decides ("U123ABC" from Slack, "alice" from agentctl);
	// Via is where from: "slack", "console", "agentctl", "api".
	By, Via string
	Reason  string
}

// Decide records d if the request is still pending: the first decision
// wins, atomically, and wakes the waiting task (due at once, its workers
// notified). won is false when another decision came first (or the
// request timed out or was withdrawn): r is then the request as that
// left it, and nothing changed. A request past its expiry is expired
// first, as its gate would.
func (s *Store) Decide(ctx context.Context, d Decision) (r Request, won bool, err error) {
	if d.By = strings.TrimSpace(d.By); d.By == "" || d.Via == "" {
		return Request{}, false, agentledger.Invalid("by", "a decision names who decides and where from")
	}
	if len(d.Reason) > 2000 {
		return Request{}, false, agentledger.Invalid("reason", "is %d bytes; at most 2000", len(d.Reason))
	}
	state := Denied
	if d.Approve {
		state = Approved
	}
	err = dbaway.OnConflict(ctx, func() error {
		r, err = scan(s.db.QueryRow(ctx, decideSQL, d.ID, state, d.By, d.Via, nullable(d.Reason), d.Tenant))
		return err
	})
	switch {
	case err == nil:
		return r, true, nil
	case !errors.Is(err, pgx.ErrNoRows):
		return Request{}, false, fmt.Errorf("deciding approval request %d: %w", d.ID, err)
	}
	if r, err = s.Get(ctx, d.Tenant, d.ID); err != nil {
		return Request{}, false, err
	}
	if r.State == Pending { // past its expiry: the timeout decides
		if r, err = s.Expire(ctx, d.ID); err != nil {
			return Request{}, false, err
		}
	}
	return r, false, nil
}

// Expire decides request id by its timeout if it is pending and past its
// expiry (its on_timeout: deny, or approve), waking its task, and returns
// it as it stands.
func (s *Store) Expire(ctx context.Context, id int64) (Request, error) {
	var r Request
	err := dbaway.OnConflict(ctx, func() (err error) {
		r, err = scan(s.db.QueryRow(ctx, expireSQL, id))
		return err
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return s.Get(ctx, "", id)
	}
	if err != nil {
		return Request{}, fmt.Errorf("expiring approval request %d: %w", id, err)
	}
	return r, nil
}

// Followed marks decided request id as followed by a gate and reports
// whether this was the first time, fleet-wide: what is told of a decision
// once (the wait it took) is told by the gate that first follows it.
func (s *Store) Followed(ctx context.Context, id int64) (first bool, err error) {
	tag, err := s.db.Exec(ctx, followedSQL, id)
	if err != nil {
		return false, fmt.Errorf("approval request %d: marking its decision followed: %w", id, err)
	}
	return tag.RowsAffected() == 1, nil
}

const followedSQL = `/* approvals.followed */
UPDATE approvals SET followed_at = now() WHERE id = $1 AND state <> 'pending' AND followed_at IS NULL`

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// taskFirst locks the task of approval request $1 before the request's
// own row is written: a cancel locks the task, then withdraws its
// requests, and the same order here leaves no deadlock between them. The
// decision then reads the request as the cancel left it. (A decision
// locks it only for the request's tenant: decideSQL's own.)
const taskFirst = `task AS (
	SELECT t.id FROM tasks t WHERE t.id = (SELECT task_id FROM approvals WHERE id = $1) FOR UPDATE
)`

var decideSQL = `/* approvals.decide */
WITH task AS (
	SELECT t.id FROM tasks t WHERE t.id = (SELECT task_id FROM approvals WHERE id = $1 AND ($6 = '' OR tenant = $6)) FOR UPDATE
),
d AS (
	UPDATE approvals SET state = $2, decided_at = now(), decided_by = $3, decided_via = $4, decision_reason = $5
	WHERE id = $1 AND state = 'pending' AND ($6 = '' OR tenant = $6) AND expires_at > now() AND EXISTS (SELECT FROM task)
	RETURNING ` + columns + `
),
` + claims.WakeTasks + `
SELECT * FROM d WHERE (SELECT count(*) FROM notified) >= 0`

var expireSQL = `/* approvals.expire */
WITH ` + taskFirst + `,
d AS (
	UPDATE approvals SET state = CASE on_timeout WHEN 'approve' THEN 'approved' ELSE 'expired' END,
		decided_at = now(), decided_by = 'timeout', decided_via = 'timeout',
		decision_reason = 'no decision by ' || to_char(expires_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS "UTC"')
			|| CASE on_timeout WHEN 'approve' THEN ', which approves' ELSE '' END
	WHERE id = $1 AND state = 'pending' AND expires_at <= now() AND EXISTS (SELECT FROM task)
	RETURNING ` + columns + `
),
` + claims.WakeTasks + `
SELECT * FROM d WHERE (SELECT count(*) FROM notified) >= 0`
