-- +goose NO TRANSACTION
-- +goose Up
-- A task can wait for a fleet-wide limit without using an attempt (issue
-- 16): its attempt ends 'deferred' and wait_reason says what it waits for
-- until it is claimed again.
--
-- Outside a transaction, so that widening task_attempts' outcome check does
-- not hold that table's lock while it reads every row (see doc.go); every
-- statement can run again if the migration stops half-way.
ALTER TABLE tasks ADD COLUMN IF NOT EXISTS wait_reason text;
ALTER TABLE task_attempts DROP CONSTRAINT IF EXISTS task_attempts_outcome_check,
    ADD CONSTRAINT task_attempts_outcome_check CHECK (outcome IS NULL OR outcome IN
    ('succeeded', 'retry', 'dead', 'cancelled', 'released', 'lease_expired', 'needs_attention', 'deferred')) NOT VALID;
ALTER TABLE task_attempts VALIDATE CONSTRAINT task_attempts_outcome_check;

-- +goose Down
DELETE FROM task_attempts WHERE outcome = 'deferred';
ALTER TABLE task_attempts DROP CONSTRAINT IF EXISTS task_attempts_outcome_check,
    ADD CONSTRAINT task_attempts_outcome_check CHECK (outcome IS NULL OR outcome IN
    ('succeeded', 'retry', 'dead', 'cancelled', 'released', 'lease_expired', 'needs_attention'));
ALTER TABLE tasks DROP COLUMN IF EXISTS wait_reason;
