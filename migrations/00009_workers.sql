-- +goose Up
-- Worker pools announce themselves, so that operators see a daemon that is
-- up but idle, not only the ones holding leases. A pool refreshes its row
-- while it runs and deletes it when it stops; a crashed pool's row goes
-- stale and is shown as such.
CREATE TABLE workers (
    id         text        PRIMARY KEY,
    host       text        NOT NULL,
    pid        integer     NOT NULL,
    queues     text[]      NOT NULL,
    kinds      text[]      NOT NULL,
    started_at timestamptz NOT NULL DEFAULT now(),
    seen_at    timestamptz NOT NULL DEFAULT now()
);

-- +goose Down
DROP TABLE workers;
