-- +goose Up
-- The waits a replay takes up anew (operator.requeue): a wait that ended
-- without what it waited for (cancelled with its task, timed out, ended by
-- an operator) before its call recorded it, or whose failed call the replay
-- reopened, gives its step to a new wait. It was deleted, and with it who
-- ended it and why; it is kept here, as it ended, with when it was
-- replaced. Its id stays its own (waits' identity never gives it again).
CREATE TABLE IF NOT EXISTS waits_replaced (
    id          bigint PRIMARY KEY,
    task_id     bigint NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    generation  integer NOT NULL,
    step        text NOT NULL,
    tenant      text NOT NULL,
    kind        text NOT NULL,
    signal      text,
    key         text,
    spec        jsonb NOT NULL,
    created_at  timestamptz NOT NULL,
    deadline    timestamptz NOT NULL,
    state       text NOT NULL,
    result      jsonb,
    signal_id   bigint,
    ended_at    timestamptz,
    ended_by    text,
    end_reason  text,
    replaced_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT waits_replaced_check CHECK (state IN ('done', 'timed_out', 'ended', 'cancelled'))
);
CREATE INDEX IF NOT EXISTS waits_replaced_task_idx ON waits_replaced (task_id);

-- +goose Down
DROP TABLE IF EXISTS waits_replaced;
