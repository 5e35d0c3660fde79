-- +goose Up
-- The retention janitor deletes finished tasks oldest first; these indexes
-- let each batch read only what it deletes, however many rows the table
-- holds.
CREATE INDEX tasks_finished_idx ON tasks (finished_at)
    WHERE state IN ('succeeded', 'dead', 'cancelled');

-- Likewise for settled notification events.
CREATE INDEX outbox_settled_idx ON outbox (updated_at)
    WHERE state IN ('delivered', 'failed');

-- +goose Down
DROP INDEX outbox_settled_idx;
DROP INDEX tasks_finished_idx;
