-- +goose NO TRANSACTION
-- +goose Up
-- A task that waits for something outside the queue — a person's approval
-- today, a signal or a timer tomorrow — is 'waiting': out of the claim's
-- index (tasks_runnable_tenant_idx holds queued and retrying tasks only),
-- so that ten thousand of them cost a claim nothing. A decision makes it
-- queued again; so does its deadline (run_at), found by tasks_waiting_idx.
--
-- Outside a transaction, as 00028 (see doc.go): the wider constraint is
-- added NOT VALID, then validated while writes go on; the index is built
-- concurrently. Every statement can run again.
ALTER TABLE tasks DROP CONSTRAINT IF EXISTS tasks_check,
    ADD CONSTRAINT tasks_check CHECK (
    state = ANY ('{queued,waiting,running,retrying,succeeded,dead,cancelled,needs_attention,compensating,compensated}'::text[])
    AND (state = 'running') = (lease_expires_at IS NOT NULL)
    AND (state <> 'running' OR lease_owner IS NOT NULL)
    AND least(char_length(tenant), char_length(queue), char_length(kind)) >= 1
    AND greatest(char_length(tenant), char_length(queue), char_length(kind)) <= 128
    AND max_attempts > 0 AND attempt >= 0
    AND (submission_key IS NULL
        OR (char_length(submission_key) BETWEEN 1 AND 255 AND request_hash IS NOT NULL))) NOT VALID;
ALTER TABLE tasks VALIDATE CONSTRAINT tasks_check;
DROP INDEX CONCURRENTLY IF EXISTS tasks_waiting_idx;
CREATE INDEX CONCURRENTLY tasks_waiting_idx ON tasks (run_at) WHERE state = 'waiting';

-- +goose Down
UPDATE tasks SET state = 'queued' WHERE state = 'waiting';
DROP INDEX IF EXISTS tasks_waiting_idx;
ALTER TABLE tasks DROP CONSTRAINT IF EXISTS tasks_check,
    ADD CONSTRAINT tasks_check CHECK (
    state = ANY ('{queued,running,retrying,succeeded,dead,cancelled,needs_attention,compensating,compensated}'::text[])
    AND (state = 'running') = (lease_expires_at IS NOT NULL)
    AND (state <> 'running' OR lease_owner IS NOT NULL)
    AND least(char_length(tenant), char_length(queue), char_length(kind)) >= 1
    AND greatest(char_length(tenant), char_length(queue), char_length(kind)) <= 128
    AND max_attempts > 0 AND attempt >= 0
    AND (submission_key IS NULL
        OR (char_length(submission_key) BETWEEN 1 AND 255 AND request_hash IS NOT NULL)));
