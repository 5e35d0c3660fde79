-- +goose NO TRANSACTION
-- +goose Up
-- The retention janitor deletes finished tasks oldest first; these indexes
-- let each batch read only what it deletes, however many rows the table
-- holds.
--
-- Built concurrently, outside a transaction, so that writes go on while
-- they build (see doc.go). A build cut off leaves an invalid index: each is
-- dropped first, so the migration can run again.
DROP INDEX CONCURRENTLY IF EXISTS tasks_finished_idx;
CREATE INDEX CONCURRENTLY tasks_finished_idx ON tasks (finished_at)
    WHERE state IN ('succeeded', 'dead', 'cancelled');

-- Likewise for settled notification events.
DROP INDEX CONCURRENTLY IF EXISTS outbox_settled_idx;
CREATE INDEX CONCURRENTLY outbox_settled_idx ON outbox (updated_at)
    WHERE state IN ('delivered', 'failed');

-- +goose Down
DROP INDEX CONCURRENTLY IF EXISTS outbox_settled_idx;
DROP INDEX CONCURRENTLY IF EXISTS tasks_finished_idx;
