-- +goose Up
-- Who asked to undo a task's effects (compensation 'operator'): an
-- operator at agentctl compensate or the console ("operator:alice"), or a
-- tenant's token through the API ("tenant:acme, token ci-deploy (7)"), as
-- cancel_requested_by names a cancel's. NULL for a compensation no one
-- asked for (failed, cancelled: the cancel names who cancelled), and for
-- one asked for before this migration or by an older release: who asked
-- is not known. A re-run clears it with the compensation; a replay that
-- continues the compensation keeps it. The column has no default: adding
-- it rewrites nothing.
ALTER TABLE tasks ADD COLUMN IF NOT EXISTS compensation_requested_by text;

-- +goose Down
ALTER TABLE tasks DROP COLUMN IF EXISTS compensation_requested_by;
