-- +goose NO TRANSACTION
-- +goose Up
-- A capped tenant's room is counted from its own running tasks. The count
-- (agentledger_tenant_room, agentledger_tenant_turn) read every running
-- task of every tenant (tasks_leased_idx) and kept its tenant's: with
-- 5,000 tasks running, 0.8 ms for each capped tenant a claim reached, and
-- a crowd claim over 10,000 tenants, half of them capped, took 21 ms where
-- it took 2.3 with nothing running (BENCHMARKS.md).
--
-- An index of every running task by tenant would make the count a look-up
-- but cost every claim one more index entry a task (9% of the server's
-- CPU in a one-tenant burn-down). So a claim records whether the task's
-- tenant had a cap (capped), and the index holds only the running tasks
-- that may count towards one: capped true, or NULL for a task no claim of
-- this version leased (enqueued and never claimed, or leased by a daemon
-- of an earlier version during an upgrade). A claim of an uncapped
-- tenant's task sets false, and adds no entry.
-- First the counts name their parameter by its function, as they count
-- now: the parameter is named capped too, and once the column exists a
-- bare "capped" would be ambiguous, and every claim reaching a capped
-- tenant would fail until the new counts replace them at the end. (Each
-- statement of this file commits on its own.)
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION agentledger_tenant_room(capped text[])
RETURNS TABLE (tenant text, room integer)
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    PERFORM 1 FROM tenant_shares s
    WHERE s.tenant = ANY (agentledger_tenant_room.capped) AND s.max_running IS NOT NULL
    ORDER BY s.tenant
    FOR UPDATE;
    RETURN QUERY
    SELECT s.tenant, greatest(s.max_running - coalesce(r.n, 0), 0)::integer
    FROM tenant_shares s
    LEFT JOIN (
        SELECT t.tenant, count(*) AS n FROM tasks t
        WHERE t.state = 'running' AND t.tenant = ANY (agentledger_tenant_room.capped)
        GROUP BY t.tenant
    ) r ON r.tenant = s.tenant
    WHERE s.tenant = ANY (agentledger_tenant_room.capped) AND s.max_running IS NOT NULL;
END;
$$;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION agentledger_tenant_turn(capped text)
RETURNS integer
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    cap integer;
BEGIN
    SELECT s.max_running INTO cap FROM tenant_shares s
    WHERE s.tenant = agentledger_tenant_turn.capped AND s.max_running IS NOT NULL
    FOR UPDATE SKIP LOCKED;
    IF NOT FOUND THEN
        RETURN 0;
    END IF;
    RETURN greatest(cap - (SELECT count(*) FROM tasks t
        WHERE t.state = 'running' AND t.tenant = agentledger_tenant_turn.capped), 0)::integer;
END;
$$;
-- +goose StatementEnd

ALTER TABLE tasks ADD COLUMN IF NOT EXISTS capped boolean;

DROP INDEX CONCURRENTLY IF EXISTS tasks_capped_running_idx;
CREATE INDEX CONCURRENTLY tasks_capped_running_idx ON tasks (tenant)
    WHERE state = 'running' AND capped IS NOT FALSE;

-- Whether any tenant has a cap is asked at every claim that may lease
-- several tenants' tasks, and at each poll; with thousands of share rows
-- holding weights only, answering it read them all.
DROP INDEX CONCURRENTLY IF EXISTS tenant_shares_capped_idx;
CREATE INDEX CONCURRENTLY tenant_shares_capped_idx ON tenant_shares (tenant)
    WHERE max_running IS NOT NULL;

-- A cap set on a tenant (a new share row with one, or a cap where there was
-- none) must count the tenant's tasks already running, which their claims
-- marked uncapped: they are marked unknown, and count. So are its other
-- unfinished tasks marked uncapped (queued again, waiting, parked): a
-- daemon of an earlier version, which marks nothing, may claim them during
-- an upgrade or after a rollback. The triggers are per statement, with the
-- rows it changed: agentd writes every share row of its config at start,
-- and a statement that caps tenants anew costs one read of the unfinished
-- tasks, however many tenants it caps. They fire as a replica too, as
-- tasks_names does (00045). A claim made while the cap's transaction is
-- open, which does not see the cap, marks what it leases uncapped; those
-- tasks do not count until they finish (an earlier version counted them
-- once committed). agentctl and agentd commit a cap at once.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION agentledger_cap_running() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    newly text[];
BEGIN
    IF TG_OP = 'INSERT' THEN
        SELECT array_agg(n.tenant) INTO newly FROM capped_new n WHERE n.max_running IS NOT NULL;
    ELSE
        SELECT array_agg(n.tenant) INTO newly FROM capped_new n JOIN capped_old o USING (tenant)
        WHERE n.max_running IS NOT NULL AND o.max_running IS NULL;
    END IF;
    IF newly IS NOT NULL THEN
        UPDATE tasks SET capped = NULL
        WHERE capped = false AND tenant = ANY (newly)
            AND state NOT IN ('succeeded', 'dead', 'cancelled', 'compensated');
    END IF;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd
CREATE OR REPLACE TRIGGER tenant_shares_capped_insert
    AFTER INSERT ON tenant_shares REFERENCING NEW TABLE AS capped_new
    FOR EACH STATEMENT EXECUTE FUNCTION agentledger_cap_running();
CREATE OR REPLACE TRIGGER tenant_shares_capped_update
    AFTER UPDATE ON tenant_shares REFERENCING OLD TABLE AS capped_old NEW TABLE AS capped_new
    FOR EACH STATEMENT EXECUTE FUNCTION agentledger_cap_running();
ALTER TABLE tenant_shares ENABLE ALWAYS TRIGGER tenant_shares_capped_insert;
ALTER TABLE tenant_shares ENABLE ALWAYS TRIGGER tenant_shares_capped_update;

-- Now the counts read only the running tasks not marked uncapped.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION agentledger_tenant_room(capped text[])
RETURNS TABLE (tenant text, room integer)
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    PERFORM 1 FROM tenant_shares s
    WHERE s.tenant = ANY (agentledger_tenant_room.capped) AND s.max_running IS NOT NULL
    ORDER BY s.tenant
    FOR UPDATE;
    RETURN QUERY
    SELECT s.tenant, greatest(s.max_running - coalesce(r.n, 0), 0)::integer
    FROM tenant_shares s
    LEFT JOIN (
        SELECT t.tenant, count(*) AS n FROM tasks t
        WHERE t.state = 'running' AND t.capped IS NOT FALSE AND t.tenant = ANY (agentledger_tenant_room.capped)
        GROUP BY t.tenant
    ) r ON r.tenant = s.tenant
    WHERE s.tenant = ANY (agentledger_tenant_room.capped) AND s.max_running IS NOT NULL;
END;
$$;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION agentledger_tenant_turn(capped text)
RETURNS integer
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    cap integer;
BEGIN
    SELECT s.max_running INTO cap FROM tenant_shares s
    WHERE s.tenant = agentledger_tenant_turn.capped AND s.max_running IS NOT NULL
    FOR UPDATE SKIP LOCKED;
    IF NOT FOUND THEN
        RETURN 0;
    END IF;
    RETURN greatest(cap - (SELECT count(*) FROM tasks t
        WHERE t.state = 'running' AND t.capped IS NOT FALSE AND t.tenant = agentledger_tenant_turn.capped), 0)::integer;
END;
$$;
-- +goose StatementEnd

-- +goose Down
-- The counts as they were, their parameter named by their function while
-- the column exists; then, once it is dropped, as 00024 and 00036 wrote
-- them.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION agentledger_tenant_room(capped text[])
RETURNS TABLE (tenant text, room integer)
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    PERFORM 1 FROM tenant_shares s
    WHERE s.tenant = ANY (agentledger_tenant_room.capped) AND s.max_running IS NOT NULL
    ORDER BY s.tenant
    FOR UPDATE;
    RETURN QUERY
    SELECT s.tenant, greatest(s.max_running - coalesce(r.n, 0), 0)::integer
    FROM tenant_shares s
    LEFT JOIN (
        SELECT t.tenant, count(*) AS n FROM tasks t
        WHERE t.state = 'running' AND t.tenant = ANY (agentledger_tenant_room.capped)
        GROUP BY t.tenant
    ) r ON r.tenant = s.tenant
    WHERE s.tenant = ANY (agentledger_tenant_room.capped) AND s.max_running IS NOT NULL;
END;
$$;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION agentledger_tenant_turn(capped text)
RETURNS integer
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    cap integer;
BEGIN
    SELECT s.max_running INTO cap FROM tenant_shares s
    WHERE s.tenant = agentledger_tenant_turn.capped AND s.max_running IS NOT NULL
    FOR UPDATE SKIP LOCKED;
    IF NOT FOUND THEN
        RETURN 0;
    END IF;
    RETURN greatest(cap - (SELECT count(*) FROM tasks t
        WHERE t.state = 'running' AND t.tenant = agentledger_tenant_turn.capped), 0)::integer;
END;
$$;
-- +goose StatementEnd
DROP TRIGGER IF EXISTS tenant_shares_capped_insert ON tenant_shares;
DROP TRIGGER IF EXISTS tenant_shares_capped_update ON tenant_shares;
DROP FUNCTION IF EXISTS agentledger_cap_running();
DROP INDEX CONCURRENTLY IF EXISTS tenant_shares_capped_idx;
DROP INDEX CONCURRENTLY IF EXISTS tasks_capped_running_idx;
ALTER TABLE tasks DROP COLUMN IF EXISTS capped;
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION agentledger_tenant_turn(capped text)
RETURNS integer
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    cap integer;
BEGIN
    SELECT s.max_running INTO cap FROM tenant_shares s
    WHERE s.tenant = capped AND s.max_running IS NOT NULL
    FOR UPDATE SKIP LOCKED;
    IF NOT FOUND THEN
        RETURN 0;
    END IF;
    RETURN greatest(cap - (SELECT count(*) FROM tasks t WHERE t.state = 'running' AND t.tenant = capped), 0)::integer;
END;
$$;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION agentledger_tenant_room(capped text[])
RETURNS TABLE (tenant text, room integer)
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    PERFORM 1 FROM tenant_shares s
    WHERE s.tenant = ANY (capped) AND s.max_running IS NOT NULL
    ORDER BY s.tenant
    FOR UPDATE;
    RETURN QUERY
    SELECT s.tenant, greatest(s.max_running - coalesce(r.n, 0), 0)::integer
    FROM tenant_shares s
    LEFT JOIN (
        SELECT t.tenant, count(*) AS n FROM tasks t
        WHERE t.state = 'running' AND t.tenant = ANY (capped)
        GROUP BY t.tenant
    ) r ON r.tenant = s.tenant
    WHERE s.tenant = ANY (capped) AND s.max_running IS NOT NULL;
END;
$$;
-- +goose StatementEnd
