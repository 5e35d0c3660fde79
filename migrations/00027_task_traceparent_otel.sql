-- +goose Up
-- OpenTelemetry (issue 18): a task keeps the W3C traceparent of its
-- submission, so that its attempts, in any daemon, join the submitter's
-- trace; a replay or re-run keeps the one of the operator's request, and
-- its attempts link back to the submission's. Catalog changes only
-- (nullable columns): NULL whenever tracing was off.
ALTER TABLE tasks ADD COLUMN IF NOT EXISTS traceparent text;
ALTER TABLE tasks ADD COLUMN IF NOT EXISTS replay_traceparent text;

-- +goose Down
ALTER TABLE tasks DROP COLUMN IF EXISTS replay_traceparent;
ALTER TABLE tasks DROP COLUMN IF EXISTS traceparent;
