-- +goose Up
-- Fleet-wide rate limits per target (package flow): an HTTP origin, an MCP
-- server, a model endpoint, a Slack channel or the Slack workspace, or a
-- kind's default ('slack-channel:*') for every target of that kind without
-- its own row. rate_n calls per rate_per_seconds (1 or 60), with a burst.
CREATE TABLE flow_limits (
    target           text        PRIMARY KEY,
    rate_n           bigint      NOT NULL CHECK (rate_n > 0),
    rate_per_seconds integer     NOT NULL CHECK (rate_per_seconds IN (1, 60)),
    burst            integer     NOT NULL DEFAULT 1 CHECK (burst >= 1),
    source           text        NOT NULL CHECK (source IN ('operator', 'config', 'default')),
    updated_at       timestamptz NOT NULL DEFAULT now()
);

-- The GCRA state of each concrete target that was ever taken from: its
-- theoretical arrival time. A kind default's targets each have their own
-- row, so every channel gets its own rate.
CREATE TABLE flow_state (
    target text        PRIMARY KEY,
    tat    timestamptz NOT NULL
);

-- +goose Down
DROP TABLE flow_state;
DROP TABLE flow_limits;
