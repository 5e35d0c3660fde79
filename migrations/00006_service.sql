-- +goose Up
-- agentd as a service: tenants and their API tokens, the Idempotency-Key
-- store of the HTTP API, the webhook inbox, and cron schedules.

CREATE TABLE tenants (
    name       text        PRIMARY KEY,
    created_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT tenants_name_check CHECK (name ~ '^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$')
);

-- Bearer tokens, stored as SHA-256 hashes: a token is high-entropy random, so
-- a fast hash is enough and lets the API look a token up by its hash.
CREATE TABLE api_tokens (
    id           bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tenant       text        NOT NULL REFERENCES tenants (name) ON DELETE CASCADE,
    name         text        NOT NULL,
    token_hash   bytea       NOT NULL UNIQUE,
    -- The token's first characters, so operators can tell tokens apart.
    prefix       text        NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    last_used_at timestamptz,
    revoked_at   timestamptz,
    CONSTRAINT api_tokens_name_check CHECK (char_length(name) BETWEEN 1 AND 128)
);
CREATE INDEX api_tokens_tenant_idx ON api_tokens (tenant);

-- Idempotency-Key records of mutating API requests, scoped by tenant and
-- operation (method + route). A request holds its key in flight until
-- locked_until; a completed one keeps the response it answered.
CREATE TABLE idempotency_keys (
    tenant       text        NOT NULL,
    operation    text        NOT NULL,
    key          text        NOT NULL,
    fingerprint  bytea       NOT NULL,
    state        text        NOT NULL DEFAULT 'in_flight',
    locked_until timestamptz,
    status       integer,
    headers      jsonb,
    body         bytea,
    created_at   timestamptz NOT NULL DEFAULT now(),
    completed_at timestamptz,
    PRIMARY KEY (tenant, operation, key),
    CONSTRAINT idempotency_keys_state_check CHECK (state IN ('in_flight', 'completed'))
);
CREATE INDEX idempotency_keys_created_idx ON idempotency_keys (created_at);

-- Webhook deliveries already accepted, by source and delivery id; written in
-- the transaction that enqueues the delivery's task.
CREATE TABLE inbox (
    source      text        NOT NULL,
    delivery_id text        NOT NULL,
    task_id     bigint,
    received_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (source, delivery_id)
);
CREATE INDEX inbox_received_idx ON inbox (received_at);

-- Durable cron schedules. next_fire_at is the next slot not yet fired; any
-- daemon fires it, under the row lock, with submission key
-- cron:<name>:<slot>.
CREATE TABLE schedules (
    name         text        PRIMARY KEY,
    tenant       text        NOT NULL DEFAULT 'default',
    spec         text        NOT NULL,
    timezone     text        NOT NULL DEFAULT 'UTC',
    queue        text        NOT NULL DEFAULT 'default',
    kind         text        NOT NULL,
    payload      jsonb       NOT NULL DEFAULT '{}',
    priority     smallint    NOT NULL DEFAULT 0,
    max_attempts integer     NOT NULL DEFAULT 25,
    missed       text        NOT NULL DEFAULT 'skip',
    enabled      boolean     NOT NULL DEFAULT true,
    next_fire_at timestamptz,
    last_fire_at timestamptz,
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT schedules_name_check CHECK (name ~ '^[a-z0-9][a-z0-9_.-]{0,62}$'),
    CONSTRAINT schedules_missed_check CHECK (missed IN ('skip', 'run-once'))
);
CREATE INDEX schedules_due_idx ON schedules (next_fire_at) WHERE enabled;

-- +goose Down
DROP TABLE schedules;
DROP TABLE inbox;
DROP TABLE idempotency_keys;
DROP TABLE api_tokens;
DROP TABLE tenants;
