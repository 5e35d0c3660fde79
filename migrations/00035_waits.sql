-- +goose NO TRANSACTION
-- +goose Up
-- Durable waits (package waits). A task waits for a signal, a timer or its
-- children by recording a wait — one per (task, generation, step), as an
-- approval request is — and parking: state 'waiting', no lease, no worker,
-- no attempt. What ends the wait wakes it (claims.WakeTasks); its deadline
-- (tasks.run_at) wakes it otherwise.
--
-- Outside a transaction, as 00033 (see doc.go): the index on tasks is built
-- concurrently; every statement can run again.
CREATE TABLE IF NOT EXISTS waits (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    task_id     bigint NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    generation  integer NOT NULL,
    step        text NOT NULL,
    tenant      text NOT NULL,
    kind        text NOT NULL,
    signal      text,
    key         text,
    spec        jsonb NOT NULL DEFAULT '{}',
    created_at  timestamptz NOT NULL DEFAULT now(),
    deadline    timestamptz NOT NULL,
    state       text NOT NULL DEFAULT 'waiting',
    result      jsonb,
    signal_id   bigint,
    ended_at    timestamptz,
    ended_by    text,
    end_reason  text,
    CONSTRAINT waits_step_key UNIQUE (task_id, generation, step),
    CONSTRAINT waits_check CHECK (
        kind IN ('signal', 'timer', 'children')
        AND state IN ('waiting', 'done', 'timed_out', 'ended', 'cancelled')
        AND (state = 'waiting') = (ended_at IS NULL)
        AND (kind <> 'signal' OR (signal IS NOT NULL AND key IS NOT NULL)))
);
-- A signal finds its waiter by (tenant, name, key), the oldest first.
CREATE INDEX IF NOT EXISTS waits_signal_idx ON waits (tenant, signal, key, id) WHERE state = 'waiting' AND kind = 'signal';
CREATE INDEX IF NOT EXISTS waits_waiting_idx ON waits (deadline) WHERE state = 'waiting';

-- A signal sent: consumed by one wait, at most; kept until expires_at for
-- a wait that has not come yet. (tenant, dedupe_key) makes the same signal
-- sent twice one.
CREATE TABLE IF NOT EXISTS signals (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tenant       text NOT NULL,
    name         text NOT NULL,
    key          text NOT NULL,
    payload      jsonb NOT NULL,
    dedupe_key   text NOT NULL,
    request_hash bytea NOT NULL,
    sent_by      text NOT NULL,
    sent_at      timestamptz NOT NULL DEFAULT now(),
    expires_at   timestamptz NOT NULL,
    state        text NOT NULL DEFAULT 'pending',
    consumed_at  timestamptz,
    wait_id      bigint,
    task_id      bigint,
    CONSTRAINT signals_dedupe_key UNIQUE (tenant, dedupe_key),
    CONSTRAINT signals_check CHECK (
        state IN ('pending', 'consumed', 'expired')
        AND (state = 'consumed') = (consumed_at IS NOT NULL))
);
CREATE INDEX IF NOT EXISTS signals_pending_idx ON signals (tenant, name, key, id) WHERE state = 'pending';
CREATE INDEX IF NOT EXISTS signals_expiry_idx ON signals (expires_at) WHERE state = 'pending';

-- A child task knows its parent (the create_task tool sets both), so that
-- its end wakes a parent waiting for it, and a parent's cancel reaches it.
ALTER TABLE tasks ADD COLUMN IF NOT EXISTS parent_id bigint, ADD COLUMN IF NOT EXISTS parent_generation integer;
DROP INDEX CONCURRENTLY IF EXISTS tasks_parent_idx;
CREATE INDEX CONCURRENTLY tasks_parent_idx ON tasks (parent_id, parent_generation) WHERE parent_id IS NOT NULL;

-- A child's end wakes its parent if the parent waits (or marks it if it
-- runs: claims.WakeTasks says why). Tasks without a parent pay only the
-- WHEN test.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION agentledger_wake_parent() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE q text;
BEGIN
    UPDATE tasks t SET
        state = CASE WHEN t.state = 'waiting' THEN 'queued' ELSE t.state END,
        run_at = CASE WHEN t.state = 'running' THEN greatest(now(), t.attempted_at + interval '1 microsecond') ELSE now() END,
        updated_at = now()
    WHERE t.id = NEW.parent_id AND t.generation = NEW.parent_generation AND t.state IN ('waiting', 'running')
    RETURNING CASE WHEN t.state = 'queued' THEN t.queue END INTO q;
    IF q IS NOT NULL THEN
        PERFORM pg_notify('agentledger_task_insert', q);
    END IF;
    RETURN NULL;
END $$;
-- +goose StatementEnd
CREATE OR REPLACE TRIGGER tasks_wake_parent AFTER UPDATE OF state ON tasks FOR EACH ROW
    WHEN (NEW.parent_id IS NOT NULL AND OLD.state IS DISTINCT FROM NEW.state
        AND NEW.state IN ('succeeded', 'dead', 'cancelled', 'compensated'))
    EXECUTE FUNCTION agentledger_wake_parent();

-- +goose Down
DROP TRIGGER IF EXISTS tasks_wake_parent ON tasks;
DROP FUNCTION IF EXISTS agentledger_wake_parent();
DROP INDEX IF EXISTS tasks_parent_idx;
ALTER TABLE tasks DROP COLUMN IF EXISTS parent_generation, DROP COLUMN IF EXISTS parent_id;
DROP TABLE IF EXISTS signals;
DROP TABLE IF EXISTS waits;
