-- +goose NO TRANSACTION
-- +goose Up
-- Issue 16, continued: a target's limit may be a rate, a concurrency cap
-- (calls in flight across the fleet), a token rate (model endpoints) and
-- a circuit breaker, in any combination; at least one.
--
-- Outside a transaction, checks added NOT VALID and then validated, as
-- 00022 does: every statement can run again if the migration stops.
ALTER TABLE flow_limits ALTER COLUMN rate_n DROP NOT NULL,
    ALTER COLUMN rate_per_seconds DROP NOT NULL,
    ADD COLUMN IF NOT EXISTS concurrency integer,
    ADD COLUMN IF NOT EXISTS tokens_n bigint,
    ADD COLUMN IF NOT EXISTS tokens_per_seconds integer,
    ADD COLUMN IF NOT EXISTS breaker_failures integer,
    ADD COLUMN IF NOT EXISTS breaker_window_ms bigint,
    ADD COLUMN IF NOT EXISTS breaker_cooldown_ms bigint;
ALTER TABLE flow_limits DROP CONSTRAINT IF EXISTS flow_limits_shape_check,
    ADD CONSTRAINT flow_limits_shape_check CHECK (
        (rate_n IS NULL) = (rate_per_seconds IS NULL)
        AND (tokens_n IS NULL) = (tokens_per_seconds IS NULL)
        AND (breaker_failures IS NULL) = (breaker_window_ms IS NULL)
        AND (breaker_failures IS NULL) = (breaker_cooldown_ms IS NULL)
        AND (concurrency IS NULL OR concurrency > 0)
        AND (tokens_n IS NULL OR (tokens_n > 0 AND tokens_per_seconds IN (1, 60)))
        AND (breaker_failures IS NULL OR (breaker_failures > 0 AND breaker_window_ms > 0 AND breaker_cooldown_ms > 0))
        AND num_nonnulls(rate_n, concurrency, tokens_n, breaker_failures) > 0) NOT VALID;
ALTER TABLE flow_limits VALIDATE CONSTRAINT flow_limits_shape_check;

-- The concurrency slots of each capped target: rows 1..cap, made when a
-- target is first capped. A call holds one slot under a lease (holder, a
-- random token per call; expires_at) so that a crashed daemon's slots come
-- back when their leases end; slots above a lowered cap are not taken.
CREATE TABLE IF NOT EXISTS flow_slots (
    target     text        NOT NULL,
    n          integer     NOT NULL,
    holder     text,
    expires_at timestamptz,
    PRIMARY KEY (target, n)
);

-- The shared circuit breaker of each target that has one and was called.
-- closed: calls pass, failures counts those since window_start; open: calls
-- wait until open_until (NULL when an operator opened it until closed);
-- half_open: one probe runs, leased until probe_until.
CREATE TABLE IF NOT EXISTS flow_breakers (
    target       text        PRIMARY KEY,
    state        text        NOT NULL DEFAULT 'closed' CHECK (state IN ('closed', 'open', 'half_open')),
    failures     integer     NOT NULL DEFAULT 0,
    window_start timestamptz,
    open_until   timestamptz,
    manual       boolean     NOT NULL DEFAULT false,
    probe_until  timestamptz,
    last_error   text,
    opens        bigint      NOT NULL DEFAULT 0,
    changed_at   timestamptz NOT NULL DEFAULT now()
);

-- +goose Down
DROP TABLE IF EXISTS flow_breakers;
DROP TABLE IF EXISTS flow_slots;
DELETE FROM flow_limits WHERE rate_n IS NULL;
ALTER TABLE flow_limits DROP CONSTRAINT IF EXISTS flow_limits_shape_check,
    DROP COLUMN IF EXISTS concurrency, DROP COLUMN IF EXISTS tokens_n, DROP COLUMN IF EXISTS tokens_per_seconds,
    DROP COLUMN IF EXISTS breaker_failures, DROP COLUMN IF EXISTS breaker_window_ms, DROP COLUMN IF EXISTS breaker_cooldown_ms,
    ALTER COLUMN rate_n SET NOT NULL, ALTER COLUMN rate_per_seconds SET NOT NULL;
