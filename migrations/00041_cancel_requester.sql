-- +goose Up
-- Who asked to cancel a task: NULL for the operator (agentctl, the
-- console, client.Database, and every cancel before this migration), or
-- the tenant's token through the API ("tenant:ci-deploy (token 7)"). A
-- task running when the cancel came is cancelled by its worker at its
-- next heartbeat; the worker's write names the requester from here. The
-- column has no default: adding it rewrites nothing.
ALTER TABLE tasks ADD COLUMN IF NOT EXISTS cancel_requested_by text;

-- +goose Down
ALTER TABLE tasks DROP COLUMN IF EXISTS cancel_requested_by;
