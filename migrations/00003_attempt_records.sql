-- +goose NO TRANSACTION
-- +goose Up
-- Attempt records are written once, when the attempt ends (succeeded,
-- failed, released, cancelled, parked, or found with an expired lease): an
-- append-only log instead of an insert at claim plus an update at the end.
-- The running attempt lives on the task row, which now says when it began.
--
-- Outside a transaction, so that the index is rebuilt while writes go on
-- (see doc.go); every statement can run again if the migration stops
-- half-way.
ALTER TABLE tasks ADD COLUMN IF NOT EXISTS attempted_at timestamptz;

-- Queued and running tasks are found through the claim indexes; operators
-- list the other states. Restricting this index keeps the hot path
-- (queued → running → succeeded) from writing to it at all. The new index
-- is built beside the old one and takes its name: a build cut off leaves
-- an invalid index, dropped on the next run.
DROP INDEX CONCURRENTLY IF EXISTS tasks_state_created_partial_idx;
CREATE INDEX CONCURRENTLY tasks_state_created_partial_idx ON tasks (state, created_at DESC, id DESC)
    WHERE state IN ('retrying', 'dead', 'cancelled', 'needs_attention');
DROP INDEX CONCURRENTLY IF EXISTS tasks_state_created_idx;
ALTER INDEX tasks_state_created_partial_idx RENAME TO tasks_state_created_idx;

-- The attempts log is append-only history written in the same statements
-- that change the task, by the one package that owns both tables. Checking a
-- foreign key on every append cost a tenth of a completion; orphaned records
-- (of tasks deleted by retention) are deleted by retention too.
ALTER TABLE task_attempts DROP CONSTRAINT IF EXISTS task_attempts_task_id_fkey;

-- +goose Down
DELETE FROM task_attempts a WHERE NOT EXISTS (SELECT 1 FROM tasks t WHERE t.id = a.task_id);
ALTER TABLE task_attempts DROP CONSTRAINT IF EXISTS task_attempts_task_id_fkey,
    ADD CONSTRAINT task_attempts_task_id_fkey FOREIGN KEY (task_id) REFERENCES tasks (id) ON DELETE CASCADE;
DROP INDEX IF EXISTS tasks_state_created_idx;
CREATE INDEX tasks_state_created_idx ON tasks (state, created_at DESC, id DESC);
ALTER TABLE tasks DROP COLUMN IF EXISTS attempted_at;
