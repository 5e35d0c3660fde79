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
-- id; the migrator sets it to 0, with a new id, when the same run made the
-- schema from nothing (migrations.Migrator.Up). A process reads it once,
-- at its first effect (ledger/scope.go).
CREATE TABLE IF NOT EXISTS installation (
    singleton        boolean     PRIMARY KEY DEFAULT true CHECK (singleton),
    id               uuid        NOT NULL DEFAULT gen_random_uuid(),
    keys_scoped_from bigint      CHECK (keys_scoped_from >= 0),
    created_at       timestamptz NOT NULL DEFAULT now()
);

INSERT INTO installation DEFAULT VALUES ON CONFLICT (singleton) DO NOTHING;

-- A release before this migration sends unscoped keys for every task:
-- once the keys are scoped it must not run, not even for a moment (an
-- effect it sent again would go under another key). Its connections call
-- agentledger_guard_ids as they open, and now fail with a server-not-ready
-- error (which they do not let through) while the keys are scoped; this
-- release calls the check under its new name (database.GuardIDs).
ALTER FUNCTION agentledger_guard_ids(boolean) RENAME TO agentledger_check_ids;

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION agentledger_guard_ids(first boolean DEFAULT false)
RETURNS bigint
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    IF EXISTS (SELECT FROM installation WHERE keys_scoped_from IS NOT NULL) THEN
        RAISE EXCEPTION USING ERRCODE = '57P03',
            MESSAGE = 'this database''s downstream keys carry its identity (migration 00042, agentctl scope-keys): '
                || 'an agentd or agentctl of an older release would send its tasks'' effects under other keys; upgrade it';
    END IF;
    RETURN agentledger_check_ids(first);
END;
$$;
-- +goose StatementEnd

-- +goose Down
-- The installation table and its identity are kept: they are data. Its
-- keys are unscoped (an older release sends unscoped keys), which is
-- refused while tasks whose effects may have gone out under scoped keys
-- remain.
-- +agentledger DownGuard
-- +goose StatementBegin
DO $$
BEGIN
    -- What may still send a key: a task, a notification not delivered (a
    -- failed one can be sent again), an effect pending or unknown.
    IF EXISTS (SELECT FROM installation WHERE keys_scoped_from IS NOT NULL) AND (EXISTS (SELECT FROM tasks)
            OR EXISTS (SELECT FROM outbox WHERE state <> 'delivered')
            OR EXISTS (SELECT FROM ledger WHERE state IN ('pending', 'unknown'))) THEN
        RAISE EXCEPTION USING ERRCODE = '55000',
            MESSAGE = 'the downstream keys of this database''s tasks carry its identity, which a release before migration 00042 '
                || 'does not send: an effect sent again would go under another key',
            HINT = 'let the tasks finish and their notifications be delivered, and delete the tasks (or migrate down on a copy), then migrate down';
    END IF;
    -- A running daemon keeps the key scope it read, scoped or not: it would
    -- go on sending its keys for tasks the others send under other ones
    -- (after this down, or a schema made anew from nothing).
    IF EXISTS (SELECT FROM workers WHERE seen_at > now() - interval '1 minute') THEN
        RAISE EXCEPTION USING ERRCODE = '55000',
            MESSAGE = 'agentd is running on this database (a worker pool announced itself within the last minute), '
                || 'and keeps the downstream key scope it read: stop every agentd, then migrate down';
    END IF;
END;
$$;
-- +goose StatementEnd
UPDATE installation SET keys_scoped_from = NULL;
DROP FUNCTION IF EXISTS agentledger_guard_ids(boolean);
ALTER FUNCTION agentledger_check_ids(boolean) RENAME TO agentledger_guard_ids;
