-- +goose Up
-- Ids leave the database: a task's id enters its effects' keys, which
-- downstream services keep (ledger.EffectKey, DownstreamKey), an
-- approval's id its Slack buttons. A failover that loses commits (an
-- asynchronous standby promoted) or a restore from a backup sets the
-- sequences back: ids the lost commits used would be issued again, and a
-- new task would carry a lost task's keys. So every id sequence moves on
-- whenever the database is another than the one recorded: on another
-- timeline (a promotion, a point-in-time restore), on another server (a
-- dump restored into another cluster) or restored logically (a dump
-- restored into this one: its tables are made anew, this one included).
-- Each moves to the server's clock in microseconds since 1970, or past its
-- last value if that is higher: above anything the lost commits could
-- have used unless they issued more than one id a microsecond, and above
-- what another fork of the same history issued if it moved on earlier
-- (a cascade of failovers, one backup restored twice).
CREATE TABLE IF NOT EXISTS database_identity (
    singleton         boolean     PRIMARY KEY DEFAULT true CHECK (singleton),
    system_identifier bigint      NOT NULL,
    timeline          bigint      NOT NULL,
    table_oid         oid         NOT NULL,
    recorded_at       timestamptz NOT NULL DEFAULT now(),
    ids_advanced_at   timestamptz
);

-- agentledger_advance_ids moves every id sequence on, under the identity
-- row's lock, and returns the next task id. The list is explicit: a
-- sequence another application keeps in this schema is not touched
-- (database/ids_test.go holds the list to the schema).
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION agentledger_advance_ids()
RETURNS bigint
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    seq regclass;
    last bigint;
    clock_floor bigint := (extract(epoch FROM clock_timestamp()) * 1000000)::bigint;
    next_task bigint;
BEGIN
    PERFORM FROM database_identity FOR UPDATE;
    FOR seq IN
        SELECT pg_get_serial_sequence(x.tbl, x.col)::regclass
        FROM (VALUES ('tasks', 'id'), ('ledger', 'seq'), ('outbox', 'id'), ('api_tokens', 'id'),
                     ('approvals', 'id'), ('waits', 'id'), ('signals', 'id')) AS x(tbl, col)
        UNION ALL SELECT 'outbox_lease_token_seq'::regclass
    LOOP
        EXECUTE format('SELECT last_value FROM %s', seq) INTO last;
        PERFORM setval(seq, greatest(last + 1, clock_floor), false);
    END LOOP;
    UPDATE database_identity SET ids_advanced_at = now();
    EXECUTE format('SELECT last_value FROM %s', pg_get_serial_sequence('tasks', 'id')) INTO next_task;
    RETURN next_task;
END;
$$;
-- +goose StatementEnd

-- agentledger_guard_ids records the database the rows live in, and
-- advances the ids when it is another than the one recorded; it returns
-- the next task id if it advanced them, NULL if not. A standby (in
-- recovery) and a read-only session are left alone: neither inserts.
-- agentd's connections call it as they open, so after a failover the
-- first connection to the promoted server advances the ids before any of
-- them inserts. No record at all is a database restored without its row
-- (or one from before this migration, which records it with first): the
-- ids advance then too.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION agentledger_guard_ids(first boolean DEFAULT false)
RETURNS bigint
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    sysid bigint;
    tl bigint;
    rel oid := 'database_identity'::regclass;
    rec database_identity%ROWTYPE;
    next_task bigint;
BEGIN
    IF pg_is_in_recovery() OR current_setting('transaction_read_only')::bool THEN
        RETURN NULL;
    END IF;
    -- A connection waits for another's check at most this long (then
    -- fails the check, which lets it through with a warning).
    PERFORM set_config('lock_timeout', '5s', true);
    -- The timeline WAL is written on now: a WAL file name's first 8 hex
    -- digits (pg_control_checkpoint's lags until the next checkpoint). A
    -- server or a role that keeps either to itself (a managed service
    -- may) reads 0 for it, which counts as unknown: it matches anything,
    -- and what is known is still compared.
    BEGIN
        SELECT system_identifier INTO sysid FROM pg_control_system();
    EXCEPTION WHEN insufficient_privilege OR feature_not_supported OR undefined_function THEN
        sysid := 0;
    END;
    BEGIN
        tl := ('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::bigint;
    EXCEPTION WHEN insufficient_privilege OR feature_not_supported OR undefined_function THEN
        tl := 0;
    END;
    SELECT * INTO rec FROM database_identity;
    IF FOUND AND rec.table_oid = rel AND (rec.system_identifier IN (sysid, 0) OR sysid = 0)
            AND (rec.timeline IN (tl, 0) OR tl = 0) THEN
        RETURN NULL;
    END IF;
    -- Another: under the row's lock, read again, so that of the
    -- connections opening at once only the first advances the ids.
    SELECT * INTO rec FROM database_identity FOR UPDATE;
    IF NOT FOUND THEN
        IF NOT first THEN
            next_task := agentledger_advance_ids();
        END IF;
        INSERT INTO database_identity (system_identifier, timeline, table_oid) VALUES (sysid, tl, rel)
        ON CONFLICT (singleton) DO NOTHING;
        RETURN next_task;
    END IF;
    IF rec.table_oid = rel AND (rec.system_identifier IN (sysid, 0) OR sysid = 0)
            AND (rec.timeline IN (tl, 0) OR tl = 0) THEN
        RETURN NULL;
    END IF;
    next_task := agentledger_advance_ids();
    UPDATE database_identity SET system_identifier = coalesce(nullif(sysid, 0), system_identifier),
        timeline = coalesce(nullif(tl, 0), timeline), table_oid = rel, recorded_at = now();
    RETURN next_task;
END;
$$;
-- +goose StatementEnd

-- The first record: nothing is known of what came before.
SELECT agentledger_guard_ids(true);

-- +goose Down
DROP FUNCTION IF EXISTS agentledger_guard_ids(boolean);
DROP FUNCTION IF EXISTS agentledger_advance_ids();
DROP TABLE IF EXISTS database_identity;
