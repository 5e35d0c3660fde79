-- +goose NO TRANSACTION
-- +goose Up
-- A newcomer lane in the claim (claims.claimDue). In a crowd of tenants a
-- claim serves them in rotation, so a tenant whose first task arrives
-- while thousands have work would wait for the round to reach it. A task
-- enqueued when its tenant had nothing runnable in its queue and another
-- tenant had is marked newcomer; a crowd claim takes the oldest marked
-- tasks first, up to a quarter of its batch, and its claim clears the mark.
-- The column has no default, so adding it rewrites nothing (NULL: not a
-- newcomer); the index holds only the marked tasks still queued.
ALTER TABLE tasks ADD COLUMN IF NOT EXISTS newcomer boolean;

DROP INDEX CONCURRENTLY IF EXISTS tasks_newcomer_idx;
CREATE INDEX CONCURRENTLY tasks_newcomer_idx ON tasks (queue, run_at, id)
    WHERE newcomer AND state = 'queued';

-- +goose Down
DROP INDEX CONCURRENTLY IF EXISTS tasks_newcomer_idx;
ALTER TABLE tasks DROP COLUMN IF EXISTS newcomer;
