-- +goose NO TRANSACTION
-- +goose Up
-- Fences test the lease, not the state. A fence on state = 'running' (or,
-- for the outbox, state = 'pending') let the planner answer a batched,
-- id-driven write from the partial index on that state; with statistics
-- gathered while nothing ran it started from every leased row and looped
-- over the batch. The fences now test lease_expires_at, which is set
-- exactly while a task runs and while an event is claimed: these
-- constraints make that an invariant the fences can rely on.
--
-- Outside a transaction, in an order where no step stops reads or writes
-- for longer than a catalog change (see doc.go): each constraint is added
-- NOT VALID (rows written from then on are checked), a lease left on a row
-- that no longer runs is cleared (it means nothing; only those rows are
-- locked), then VALIDATE reads the table while writes go on. Every
-- statement can run again if the migration stops half-way.
ALTER TABLE tasks DROP CONSTRAINT IF EXISTS tasks_running_lease_check,
    DROP CONSTRAINT IF EXISTS tasks_lease_check,
    ADD CONSTRAINT tasks_lease_check CHECK (
    (state = 'running') = (lease_expires_at IS NOT NULL)
    AND (state <> 'running' OR lease_owner IS NOT NULL)) NOT VALID;
UPDATE tasks SET lease_expires_at = NULL
WHERE state <> 'running' AND lease_expires_at IS NOT NULL;
ALTER TABLE tasks VALIDATE CONSTRAINT tasks_lease_check;

ALTER TABLE outbox DROP CONSTRAINT IF EXISTS outbox_lease_check,
    ADD CONSTRAINT outbox_lease_check CHECK (
    state = 'pending' OR lease_expires_at IS NULL) NOT VALID;
UPDATE outbox SET lease_expires_at = NULL
WHERE state <> 'pending' AND lease_expires_at IS NOT NULL;
ALTER TABLE outbox VALIDATE CONSTRAINT outbox_lease_check;

-- +goose Down
ALTER TABLE outbox DROP CONSTRAINT IF EXISTS outbox_lease_check;
ALTER TABLE tasks DROP CONSTRAINT IF EXISTS tasks_lease_check,
    DROP CONSTRAINT IF EXISTS tasks_running_lease_check,
    ADD CONSTRAINT tasks_running_lease_check CHECK (state <> 'running' OR
    (lease_owner IS NOT NULL AND lease_expires_at IS NOT NULL));
