-- +goose NO TRANSACTION
-- +goose Up
-- When a daemon's gate first followed a request's decision: the wait a
-- decision took is observed once (a metric, a span), not again at each
-- replay or retry of the task that reaches the same decided request.
-- Outside a transaction (see doc.go), each statement safe to run again.
ALTER TABLE approvals ADD COLUMN IF NOT EXISTS followed_at timestamptz;
-- Decisions made before: their wait was observed already, by the release
-- before this one.
UPDATE approvals SET followed_at = decided_at WHERE state <> 'pending' AND followed_at IS NULL;

-- +goose Down
ALTER TABLE approvals DROP COLUMN IF EXISTS followed_at;
