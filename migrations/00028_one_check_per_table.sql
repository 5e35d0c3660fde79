-- +goose NO TRANSACTION
-- +goose Up
-- One CHECK constraint per hot table, written with nothing to fold.
-- PostgreSQL rebuilds a table's CHECK expressions for every statement that
-- inserts into or updates it: it reads each one back from its stored node
-- text, folds its constants (an IN list is an ARRAY[...] built anew each
-- time) and compiles it, whether the statement writes one row or a
-- thousand. With seven constraints on tasks that was 22 µs of a one-row
-- update's 41 µs of server CPU (19 µs with none): a tax on every enqueue,
-- claim and completion at a low rate, where each statement carries a task
-- or two. The rules are the same; they are now one expression per table,
-- the allowed states an array constant, and the three name lengths one
-- least/greatest pair (29 µs).
--
-- Outside a transaction, in the order of 00010 (see doc.go): each new
-- constraint is added NOT VALID (a catalog change), VALIDATE reads the
-- table while writes go on, and the old constraints, which say no more,
-- are dropped. Every statement can run again if the migration stops
-- half-way.
ALTER TABLE tasks DROP CONSTRAINT IF EXISTS tasks_check,
    ADD CONSTRAINT tasks_check CHECK (
    state = ANY ('{queued,running,retrying,succeeded,dead,cancelled,needs_attention,compensating,compensated}'::text[])
    AND (state = 'running') = (lease_expires_at IS NOT NULL)
    AND (state <> 'running' OR lease_owner IS NOT NULL)
    AND least(char_length(tenant), char_length(queue), char_length(kind)) >= 1
    AND greatest(char_length(tenant), char_length(queue), char_length(kind)) <= 128
    AND max_attempts > 0 AND attempt >= 0
    AND (submission_key IS NULL
        OR (char_length(submission_key) BETWEEN 1 AND 255 AND request_hash IS NOT NULL))) NOT VALID;
ALTER TABLE tasks VALIDATE CONSTRAINT tasks_check;
ALTER TABLE tasks DROP CONSTRAINT IF EXISTS tasks_state_check,
    DROP CONSTRAINT IF EXISTS tasks_lease_check,
    DROP CONSTRAINT IF EXISTS tasks_kind_check,
    DROP CONSTRAINT IF EXISTS tasks_queue_check,
    DROP CONSTRAINT IF EXISTS tasks_tenant_check,
    DROP CONSTRAINT IF EXISTS tasks_attempts_check,
    DROP CONSTRAINT IF EXISTS tasks_submission_key_check;

ALTER TABLE task_attempts DROP CONSTRAINT IF EXISTS task_attempts_check,
    ADD CONSTRAINT task_attempts_check CHECK (outcome IS NULL
    OR outcome = ANY ('{succeeded,retry,dead,cancelled,released,lease_expired,needs_attention,deferred,compensating,compensated}'::text[])) NOT VALID;
ALTER TABLE task_attempts VALIDATE CONSTRAINT task_attempts_check;
ALTER TABLE task_attempts DROP CONSTRAINT IF EXISTS task_attempts_outcome_check;

ALTER TABLE ledger DROP CONSTRAINT IF EXISTS ledger_check,
    ADD CONSTRAINT ledger_check CHECK (
    class = ANY ('{pure,keyed,reconcilable,unsafe,local}'::text[])
    AND state = ANY ('{pending,completed,failed,unknown}'::text[])) NOT VALID;
ALTER TABLE ledger VALIDATE CONSTRAINT ledger_check;
ALTER TABLE ledger DROP CONSTRAINT IF EXISTS ledger_class_check,
    DROP CONSTRAINT IF EXISTS ledger_state_check;

ALTER TABLE outbox DROP CONSTRAINT IF EXISTS outbox_check,
    ADD CONSTRAINT outbox_check CHECK (
    state = ANY ('{pending,delivered,failed}'::text[])
    AND (state = 'pending' OR lease_expires_at IS NULL)
    AND (event = 'message') = (rule IS NULL)
    AND (event = 'message') = (step_path IS NOT NULL)) NOT VALID;
ALTER TABLE outbox VALIDATE CONSTRAINT outbox_check;
ALTER TABLE outbox DROP CONSTRAINT IF EXISTS outbox_state_check,
    DROP CONSTRAINT IF EXISTS outbox_lease_check,
    DROP CONSTRAINT IF EXISTS outbox_source_check;

-- +goose Down
ALTER TABLE outbox DROP CONSTRAINT IF EXISTS outbox_check,
    ADD CONSTRAINT outbox_state_check CHECK (state IN ('pending', 'delivered', 'failed')),
    ADD CONSTRAINT outbox_lease_check CHECK (state = 'pending' OR lease_expires_at IS NULL),
    ADD CONSTRAINT outbox_source_check CHECK ((event = 'message') = (rule IS NULL)
        AND (event = 'message') = (step_path IS NOT NULL));
ALTER TABLE ledger DROP CONSTRAINT IF EXISTS ledger_check,
    ADD CONSTRAINT ledger_class_check CHECK (class IN ('pure', 'keyed', 'reconcilable', 'unsafe', 'local')),
    ADD CONSTRAINT ledger_state_check CHECK (state IN ('pending', 'completed', 'failed', 'unknown'));
ALTER TABLE task_attempts DROP CONSTRAINT IF EXISTS task_attempts_check,
    ADD CONSTRAINT task_attempts_outcome_check CHECK (outcome IS NULL OR outcome IN
    ('succeeded', 'retry', 'dead', 'cancelled', 'released', 'lease_expired', 'needs_attention',
     'deferred', 'compensating', 'compensated'));
ALTER TABLE tasks DROP CONSTRAINT IF EXISTS tasks_check,
    ADD CONSTRAINT tasks_state_check CHECK (state IN ('queued', 'running', 'retrying', 'succeeded',
        'dead', 'cancelled', 'needs_attention', 'compensating', 'compensated')),
    ADD CONSTRAINT tasks_lease_check CHECK ((state = 'running') = (lease_expires_at IS NOT NULL)
        AND (state <> 'running' OR lease_owner IS NOT NULL)),
    ADD CONSTRAINT tasks_kind_check CHECK (char_length(kind) BETWEEN 1 AND 128),
    ADD CONSTRAINT tasks_queue_check CHECK (char_length(queue) BETWEEN 1 AND 128),
    ADD CONSTRAINT tasks_tenant_check CHECK (char_length(tenant) BETWEEN 1 AND 128),
    ADD CONSTRAINT tasks_attempts_check CHECK (max_attempts > 0 AND attempt >= 0),
    ADD CONSTRAINT tasks_submission_key_check CHECK (submission_key IS NULL OR
        (char_length(submission_key) BETWEEN 1 AND 255 AND request_hash IS NOT NULL));
