-- +goose Up
-- Approval gates: an effect declared as needing a person's decision
-- records its request here — the call exactly as it would be performed —
-- and its task waits, holding no lease, until someone decides or the
-- request times out. One request per (task, generation, step): a replay
-- finds the decision recorded, a re-run (a new generation) asks again. The
-- first decision wins (an UPDATE of a pending row); state says which.
CREATE TABLE approvals (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    task_id         bigint NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    generation      integer NOT NULL,
    step            text NOT NULL,
    tenant          text NOT NULL,
    tool            text NOT NULL,
    class           text NOT NULL,
    target          text,
    request         jsonb NOT NULL,
    reason          text,
    approvers       text[] NOT NULL DEFAULT '{}',
    on_timeout      text NOT NULL DEFAULT 'deny',
    requested_at    timestamptz NOT NULL DEFAULT now(),
    expires_at      timestamptz NOT NULL,
    state           text NOT NULL DEFAULT 'pending',
    decided_at      timestamptz,
    decided_by      text,
    decided_via     text,
    decision_reason text,
    CONSTRAINT approvals_step_key UNIQUE (task_id, generation, step),
    CONSTRAINT approvals_check CHECK (
        state IN ('pending', 'approved', 'denied', 'expired', 'withdrawn')
        AND on_timeout IN ('deny', 'approve')
        AND (state = 'pending') = (decided_at IS NULL))
);
CREATE INDEX approvals_pending_idx ON approvals (requested_at) WHERE state = 'pending';

-- +goose Down
DROP TABLE approvals;
