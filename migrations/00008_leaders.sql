-- +goose Up
-- Leases on singleton jobs (the retention janitor): one daemon at a time
-- holds a name until it releases it or the lease expires. A row, not an
-- advisory lock, so that it works through a transaction-pooling PgBouncer,
-- where a session lock would stay behind on whichever server connection
-- took it.
CREATE TABLE leaders (
    name       text        PRIMARY KEY,
    owner      text        NOT NULL,
    expires_at timestamptz NOT NULL
);

-- +goose Down
DROP TABLE leaders;
