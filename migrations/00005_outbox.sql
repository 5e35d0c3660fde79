-- +goose Up
-- Notifications (packages outbox and notifier): the rules that say who hears
-- about which task state changes, and the transactional outbox the state
-- changes write in the same statement.

CREATE TABLE notification_rules (
    name       text        PRIMARY KEY,
    -- NULL matches every tenant, queue or kind.
    tenant     text,
    queue      text,
    kind       text,
    -- The task states that notify: a message is posted at the first and
    -- updated in place at the others.
    events     text[]      NOT NULL,
    channel    text        NOT NULL,
    enabled    boolean     NOT NULL DEFAULT true,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),

    CONSTRAINT notification_rules_name_check CHECK (name ~ '^[a-z0-9][a-z0-9_.-]{0,62}$'),
    CONSTRAINT notification_rules_events_check CHECK (cardinality(events) > 0 AND
        events <@ ARRAY['succeeded', 'retrying', 'dead', 'cancelled', 'needs_attention']::text[]),
    CONSTRAINT notification_rules_channel_check CHECK (char_length(channel) BETWEEN 1 AND 80)
);

-- Outbox claims take tokens from one sequence, so that a ledger row's owner
-- token names one claim of one event.
CREATE SEQUENCE outbox_lease_token_seq;

CREATE TABLE outbox (
    -- The event's stable id.
    id               bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tenant           text        NOT NULL,
    task_id          bigint      NOT NULL,
    generation       integer     NOT NULL,
    attempt          integer     NOT NULL,
    -- A task state (an event of rule) or 'message' (the notify tool's post,
    -- made at step_path).
    event            text        NOT NULL,
    rule             text,
    step_path        text,
    channel          text        NOT NULL,
    -- What the message shows, as of the change: kind, queue, state, attempt,
    -- error and result summaries, or the tool's text.
    payload          jsonb       NOT NULL,
    state            text        NOT NULL DEFAULT 'pending',
    -- Failed deliveries (not waits for a rate limit).
    failures         integer     NOT NULL DEFAULT 0,
    lease_owner      text,
    lease_token      bigint,
    lease_expires_at timestamptz,
    available_at     timestamptz NOT NULL DEFAULT now(),
    last_error       text,
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    delivered_at     timestamptz,

    CONSTRAINT outbox_state_check CHECK (state IN ('pending', 'delivered', 'failed')),
    CONSTRAINT outbox_source_check CHECK ((event = 'message') = (rule IS NULL)
        AND (event = 'message') = (step_path IS NOT NULL))
);

-- Dispatchers read only undelivered events.
CREATE INDEX outbox_pending_idx ON outbox (available_at, id) WHERE state = 'pending';
-- Events of one (task, rule) are delivered in order; operators list a
-- task's notifications.
CREATE INDEX outbox_task_idx ON outbox (task_id, rule, id);

-- +goose Down
DROP TABLE outbox;
DROP SEQUENCE outbox_lease_token_seq;
DROP TABLE notification_rules;
