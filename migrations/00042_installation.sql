-- +goose Up
-- The installation: a random identity of this database, made when it is
-- migrated, which enters the Idempotency-Keys its effects send downstream
-- (ledger.ScopedDownstreamKey). A key is made of the tenant, the task id,
-- the generation, the step and the target: two databases — staging and
-- production on one payment account, two regions, one rebuilt from
-- nothing — would otherwise send the same key for their own task 5, and a
-- provider would answer the second with the first's charge.
--
-- keys_scoped_from is the first task id whose keys carry it: 0 on a
-- database migrated before it has a task (every task), NULL on one that
-- has tasks, where a keyed call may have gone out under the unscoped key
-- and be sent again by the next attempt; agentctl scope-keys sets it then,
-- every daemon stopped, past the last task id. A daemon reads it when it
-- starts.
CREATE TABLE IF NOT EXISTS installation (
    singleton        boolean     PRIMARY KEY DEFAULT true CHECK (singleton),
    id               uuid        NOT NULL DEFAULT gen_random_uuid(),
    keys_scoped_from bigint      CHECK (keys_scoped_from >= 0),
    created_at       timestamptz NOT NULL DEFAULT now()
);

INSERT INTO installation (keys_scoped_from)
SELECT CASE WHEN NOT EXISTS (SELECT FROM tasks) THEN 0 END
ON CONFLICT (singleton) DO NOTHING;

-- +goose Down
DROP TABLE IF EXISTS installation;
