-- +goose Up
-- The installation: a random identity of this database, made when it is
-- migrated, which enters the Idempotency-Keys its effects send downstream
-- (ledger.ScopedDownstreamKey). A key is made of the tenant, the task id,
-- the generation, the step and the target: two databases — staging and
-- production on one payment account, two regions, one rebuilt from
-- nothing — would otherwise send the same key for their own task 5, and a
-- provider would answer the second with the first's charge.
--
-- keys_scoped_from is the first task id whose keys carry it. NULL here: a
-- database that existed before may have daemons of an older release at
-- work (a rolling upgrade) and keyed calls out under unscoped keys, to be
-- sent again by the next attempt, even with its tasks table empty.
-- agentctl scope-keys sets it, every daemon stopped, past the last task
-- id; the migrator sets it to 0 when the same run made the schema from
-- nothing (migrations.Migrator.Up). A daemon reads it when it starts.
--
-- Down keeps the table: the identity is data (a down and an up again
-- must not give the same tasks other keys).
CREATE TABLE IF NOT EXISTS installation (
    singleton        boolean     PRIMARY KEY DEFAULT true CHECK (singleton),
    id               uuid        NOT NULL DEFAULT gen_random_uuid(),
    keys_scoped_from bigint      CHECK (keys_scoped_from >= 0),
    created_at       timestamptz NOT NULL DEFAULT now()
);

INSERT INTO installation DEFAULT VALUES ON CONFLICT (singleton) DO NOTHING;

-- +goose Down
SELECT 'the installation table and its identity are kept';
