-- +goose Up
-- Tasks and their attempts: the claim protocol's tables (package claims).

CREATE TABLE tasks (
    id                  bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tenant              text        NOT NULL DEFAULT 'default',
    queue               text        NOT NULL DEFAULT 'default',
    kind                text        NOT NULL,
    payload             jsonb       NOT NULL DEFAULT '{}',
    priority            smallint    NOT NULL DEFAULT 0,
    run_at              timestamptz NOT NULL DEFAULT now(),
    state               text        NOT NULL DEFAULT 'queued',
    attempt             integer     NOT NULL DEFAULT 0,
    max_attempts        integer     NOT NULL DEFAULT 25,
    generation          integer     NOT NULL DEFAULT 1,
    -- The lease: who works the task, until when, and the fencing token every
    -- write of that attempt must present. The token only ever grows.
    lease_owner         text,
    lease_token         bigint      NOT NULL DEFAULT 0,
    lease_expires_at    timestamptz,
    cancel_requested_at timestamptz,
    result              jsonb,
    last_error          text,
    -- Submission dedupe: one task per (tenant, submission_key); the request
    -- hash tells a retry (same hash) from a key reuse (different hash).
    submission_key      text,
    request_hash        bytea,
    created_at          timestamptz NOT NULL DEFAULT now(),
    updated_at          timestamptz NOT NULL DEFAULT now(),
    finished_at         timestamptz,

    CONSTRAINT tasks_state_check CHECK (state IN
        ('queued', 'running', 'retrying', 'succeeded', 'dead', 'cancelled', 'needs_attention')),
    CONSTRAINT tasks_kind_check CHECK (char_length(kind) BETWEEN 1 AND 128),
    CONSTRAINT tasks_queue_check CHECK (char_length(queue) BETWEEN 1 AND 128),
    CONSTRAINT tasks_tenant_check CHECK (char_length(tenant) BETWEEN 1 AND 128),
    CONSTRAINT tasks_attempts_check CHECK (max_attempts > 0 AND attempt >= 0),
    CONSTRAINT tasks_running_lease_check CHECK (state <> 'running' OR
        (lease_owner IS NOT NULL AND lease_expires_at IS NOT NULL)),
    CONSTRAINT tasks_submission_key_check CHECK (submission_key IS NULL OR
        (char_length(submission_key) BETWEEN 1 AND 255 AND request_hash IS NOT NULL))
);

CREATE UNIQUE INDEX tasks_submission_key_idx ON tasks (tenant, submission_key)
    WHERE submission_key IS NOT NULL;

-- Claiming reads only these two partial indexes, so finished tasks (the vast
-- majority of rows in a long-lived table) cost the claim nothing.
CREATE INDEX tasks_runnable_idx ON tasks (queue, priority, run_at, id)
    WHERE state IN ('queued', 'retrying');
CREATE INDEX tasks_leased_idx ON tasks (queue, lease_expires_at)
    WHERE state = 'running';

-- Operators list by state and recency.
CREATE INDEX tasks_state_created_idx ON tasks (state, created_at DESC, id DESC);

CREATE TABLE task_attempts (
    task_id     bigint      NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    lease_token bigint      NOT NULL,
    attempt     integer     NOT NULL,
    generation  integer     NOT NULL,
    worker      text        NOT NULL,
    started_at  timestamptz NOT NULL,
    ended_at    timestamptz,
    outcome     text,
    error       text,
    PRIMARY KEY (task_id, lease_token),
    CONSTRAINT task_attempts_outcome_check CHECK (outcome IS NULL OR outcome IN
        ('succeeded', 'retry', 'dead', 'cancelled', 'released', 'lease_expired'))
);

-- Wake-ups: one NOTIFY per statement and queue, carrying the queue name, for
-- rows that are due now. Statement-level, so a batch insert notifies once.
-- +goose StatementBegin
CREATE FUNCTION agentledger_notify_insert() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    q text;
BEGIN
    FOR q IN SELECT DISTINCT queue FROM new_tasks WHERE run_at <= now() LOOP
        PERFORM pg_notify('agentledger_task_insert', q);
    END LOOP;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

CREATE TRIGGER tasks_notify_insert AFTER INSERT ON tasks
    REFERENCING NEW TABLE AS new_tasks
    FOR EACH STATEMENT EXECUTE FUNCTION agentledger_notify_insert();

-- +goose Down
DROP TRIGGER tasks_notify_insert ON tasks;
DROP FUNCTION agentledger_notify_insert();
DROP TABLE task_attempts;
DROP TABLE tasks;
