package claims

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/agentledger/agentledger"
)

// attemptOutcomesSQL reads the ended attempts of ($1 ids, $2 tokens),
// successes included (attempt_records), each looked up by its key: OFFSET
// 0 keeps the view's branches from being flattened into a join of the
// whole view, which no index serves.
const attemptOutcomesSQL = `/* claims.attempt_outcomes */
SELECT l.id, l.token, a.outcome
FROM unnest($1::bigint[], $2::bigint[]) AS l(id, token)
CROSS JOIN LATERAL (
	SELECT r.outcome FROM attempt_records r
	WHERE r.task_id = l.id AND r.lease_token = l.token AND r.outcome IS NOT NULL
	OFFSET 0
) a`

// AttemptOutcomes reads back how the attempts of leases ended, by their
// fencing tokens: what a finishing write whose commit went unanswered (a
// connection cut, a failover) did, or whoever ended the attempt instead.
// A lease missing from the map has no ended attempt: its write did not
// commit.
func (s *Store) AttemptOutcomes(ctx context.Context, leases []agentledger.Lease) (map[agentledger.Lease]agentledger.AttemptOutcome, error) {
	ids, tokens := make([]int64, len(leases)), make([]int64, len(leases))
	for i, l := range leases {
		ids[i], tokens[i] = l.TaskID, l.Token
	}
	rows, err := s.db.Query(ctx, attemptOutcomesSQL, ids, tokens)
	if err != nil {
		return nil, fmt.Errorf("attempt outcomes: %w", err)
	}
	out := map[agentledger.Lease]agentledger.AttemptOutcome{}
	var l agentledger.Lease
	var o string
	if _, err := pgx.ForEachRow(rows, []any{&l.TaskID, &l.Token, &o}, func() error {
		out[l] = agentledger.AttemptOutcome(o)
		return nil
	}); err != nil {
		return nil, fmt.Errorf("attempt outcomes: %w", err)
	}
	return out, nil
}
