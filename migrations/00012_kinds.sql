-- +goose Up
-- The payload schemas of the typed kinds daemons serve (daemon.Kind): a
-- daemon publishes its kinds when it starts, so that agentctl and the HTTP
-- API of any daemon can refuse a payload that does not fit before the task
-- is queued. A kind no daemon published is not checked.
CREATE TABLE kinds (
    name           text PRIMARY KEY,
    payload_schema jsonb NOT NULL,
    published_by   text NOT NULL,
    updated_at     timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT kinds_name_check CHECK (char_length(name) BETWEEN 1 AND 128)
);

-- +goose Down
DROP TABLE kinds;
