-- +goose NO TRANSACTION
-- +goose Up
-- Sagas (issue 17): a task whose completed effects declared compensations
-- runs them when it ends dead, is cancelled, or an operator asks.
--
-- tasks.compensation is why a task is in its compensation phase (NULL:
-- its forward path). 'compensating' is a claimable state like 'retrying'
-- (a worker runs the compensations under an ordinary lease); 'compensated'
-- is finished. ledger.compensate holds, on the row of an effect that
-- declared one, the tool call that undoes it ({"tool", "args"}, args a
-- template over the effect's result): the compensation phase of any kind
-- reads it from the journal, and the statements that end a task tell, in
-- the same statement, whether it has anything to undo.
--
-- Outside a transaction (see doc.go): each check is widened NOT VALID and
-- validated while writes go on; the claim's and the retention janitor's
-- partial indexes are rebuilt under another name with the new state,
-- the old ones dropped concurrently and the new ones renamed. Every
-- statement can run again if the migration stops half-way.
ALTER TABLE tasks ADD COLUMN IF NOT EXISTS compensation text;
ALTER TABLE ledger ADD COLUMN IF NOT EXISTS compensate jsonb;

ALTER TABLE tasks DROP CONSTRAINT IF EXISTS tasks_state_check,
    ADD CONSTRAINT tasks_state_check CHECK (state IN ('queued', 'running', 'retrying', 'succeeded', 'dead',
    'cancelled', 'needs_attention', 'compensating', 'compensated')) NOT VALID;
ALTER TABLE tasks VALIDATE CONSTRAINT tasks_state_check;

ALTER TABLE task_attempts DROP CONSTRAINT IF EXISTS task_attempts_outcome_check,
    ADD CONSTRAINT task_attempts_outcome_check CHECK (outcome IS NULL OR outcome IN
    ('succeeded', 'retry', 'dead', 'cancelled', 'released', 'lease_expired', 'needs_attention', 'deferred',
    'compensating', 'compensated')) NOT VALID;
ALTER TABLE task_attempts VALIDATE CONSTRAINT task_attempts_outcome_check;

ALTER TABLE notification_rules DROP CONSTRAINT IF EXISTS notification_rules_events_check,
    ADD CONSTRAINT notification_rules_events_check CHECK (cardinality(events) > 0 AND
    events <@ ARRAY['succeeded', 'retrying', 'dead', 'cancelled', 'needs_attention',
    'compensating', 'compensated']::text[]) NOT VALID;
ALTER TABLE notification_rules VALIDATE CONSTRAINT notification_rules_events_check;

DROP INDEX CONCURRENTLY IF EXISTS tasks_runnable_saga_idx;
CREATE INDEX CONCURRENTLY tasks_runnable_saga_idx ON tasks (queue, tenant, priority, run_at, id)
    WHERE state IN ('queued', 'retrying', 'compensating');
DROP INDEX CONCURRENTLY IF EXISTS tasks_runnable_tenant_idx;
ALTER INDEX IF EXISTS tasks_runnable_saga_idx RENAME TO tasks_runnable_tenant_idx;

DROP INDEX CONCURRENTLY IF EXISTS tasks_finished_saga_idx;
CREATE INDEX CONCURRENTLY tasks_finished_saga_idx ON tasks (finished_at)
    WHERE state IN ('succeeded', 'dead', 'cancelled', 'compensated');
DROP INDEX CONCURRENTLY IF EXISTS tasks_finished_idx;
ALTER INDEX IF EXISTS tasks_finished_saga_idx RENAME TO tasks_finished_idx;

-- +goose Down
DROP INDEX CONCURRENTLY IF EXISTS tasks_finished_idx;
CREATE INDEX CONCURRENTLY tasks_finished_idx ON tasks (finished_at)
    WHERE state IN ('succeeded', 'dead', 'cancelled');
DROP INDEX CONCURRENTLY IF EXISTS tasks_runnable_tenant_idx;
CREATE INDEX CONCURRENTLY tasks_runnable_tenant_idx ON tasks (queue, tenant, priority, run_at, id)
    WHERE state IN ('queued', 'retrying');
UPDATE tasks SET state = 'dead', compensation = NULL WHERE state IN ('compensating', 'compensated');
DELETE FROM task_attempts WHERE outcome IN ('compensating', 'compensated');
ALTER TABLE notification_rules DROP CONSTRAINT IF EXISTS notification_rules_events_check,
    ADD CONSTRAINT notification_rules_events_check CHECK (cardinality(events) > 0 AND
    events <@ ARRAY['succeeded', 'retrying', 'dead', 'cancelled', 'needs_attention']::text[]);
ALTER TABLE task_attempts DROP CONSTRAINT IF EXISTS task_attempts_outcome_check,
    ADD CONSTRAINT task_attempts_outcome_check CHECK (outcome IS NULL OR outcome IN
    ('succeeded', 'retry', 'dead', 'cancelled', 'released', 'lease_expired', 'needs_attention', 'deferred'));
ALTER TABLE tasks DROP CONSTRAINT IF EXISTS tasks_state_check,
    ADD CONSTRAINT tasks_state_check CHECK (state IN
    ('queued', 'running', 'retrying', 'succeeded', 'dead', 'cancelled', 'needs_attention'));
ALTER TABLE ledger DROP COLUMN IF EXISTS compensate;
ALTER TABLE tasks DROP COLUMN IF EXISTS compensation;
