-- +goose NO TRANSACTION
-- +goose Up
-- The dedupe ledger (package ledger): one row per intended effect.
--
-- Outside a transaction, so that widening task_attempts' outcome check does
-- not hold that table's lock while it reads every row (see doc.go); every
-- statement can run again if the migration stops half-way.

CREATE TABLE IF NOT EXISTS ledger (
    tenant        text        NOT NULL,
    operation     text        NOT NULL,
    effect_key    text        NOT NULL,
    request_hash  bytea       NOT NULL,
    class         text        NOT NULL,
    state         text        NOT NULL DEFAULT 'pending',
    -- The journal: which task generation intended the effect, where.
    task_id       bigint      NOT NULL,
    generation    integer     NOT NULL,
    step_path     text        NOT NULL,
    seq           bigint      GENERATED ALWAYS AS IDENTITY,
    -- The fencing token of the attempt that holds the reservation. A
    -- pending row whose owner is not the current lease holder is an effect
    -- of unknown outcome.
    owner_token   bigint      NOT NULL,
    performed     integer     NOT NULL DEFAULT 0,
    retry_allowed boolean     NOT NULL DEFAULT false,
    result        jsonb,
    external_ref  text,
    error         text,
    note          text,
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now(),
    completed_at  timestamptz,

    PRIMARY KEY (tenant, operation, effect_key),
    CONSTRAINT ledger_class_check CHECK (class IN ('pure', 'keyed', 'reconcilable', 'unsafe', 'local')),
    CONSTRAINT ledger_state_check CHECK (state IN ('pending', 'completed', 'failed', 'unknown'))
);

-- The journal of a task generation, in the order its effects were intended.
CREATE INDEX IF NOT EXISTS ledger_journal_idx ON ledger (task_id, generation, seq);

-- An attempt that finds an unsafe effect of unknown outcome parks its task
-- for an operator. The wider check replaces the old one NOT VALID (a
-- catalog change), then VALIDATE reads the table while writes go on.
ALTER TABLE task_attempts DROP CONSTRAINT IF EXISTS task_attempts_outcome_check,
    ADD CONSTRAINT task_attempts_outcome_check CHECK (outcome IS NULL OR outcome IN
    ('succeeded', 'retry', 'dead', 'cancelled', 'released', 'lease_expired', 'needs_attention')) NOT VALID;
ALTER TABLE task_attempts VALIDATE CONSTRAINT task_attempts_outcome_check;

-- +goose Down
DELETE FROM task_attempts WHERE outcome = 'needs_attention';
ALTER TABLE task_attempts DROP CONSTRAINT IF EXISTS task_attempts_outcome_check,
    ADD CONSTRAINT task_attempts_outcome_check CHECK (outcome IS NULL OR outcome IN
    ('succeeded', 'retry', 'dead', 'cancelled', 'released', 'lease_expired'));
DROP TABLE IF EXISTS ledger;
