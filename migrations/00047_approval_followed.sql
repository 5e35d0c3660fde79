-- +goose Up
-- When a daemon's gate first followed a request's decision: the wait a
-- decision took is observed once (a metric, a span), not again at each
-- replay or retry of the task that reaches the same decided request.
ALTER TABLE approvals ADD COLUMN followed_at timestamptz;

-- +goose Down
ALTER TABLE approvals DROP COLUMN followed_at;
