-- +goose NO TRANSACTION
-- +goose Up
-- Fair share between tenants in the claim (issue 16): each tenant's weight
-- (its shares of a claim round when several tenants have due work) and the
-- most tasks it may have running across the fleet. A tenant without a row
-- has weight 1 and no cap. Owned by package tenants; read by the claim.
CREATE TABLE IF NOT EXISTS tenant_shares (
    tenant      text        PRIMARY KEY,
    weight      integer     NOT NULL DEFAULT 1 CHECK (weight BETWEEN 1 AND 10000),
    max_running integer     CHECK (max_running > 0),
    source      text        NOT NULL CHECK (source IN ('operator', 'config')),
    updated_at  timestamptz NOT NULL DEFAULT now()
);

-- The claim reads each tenant's due tasks in a queue from its head, one
-- index descent per tenant, and walks the same index to find the tenants
-- that have runnable tasks (a loose index scan). It replaces
-- tasks_runnable_idx (queue, priority, run_at, id): with both, a plan that
-- cannot tell a tenant of one task from one of 100,000 (a generic plan, or
-- statistics that saw one tenant) could read a tenant's head through the
-- old index, past every task of the others. A daemon of an earlier version
-- still claims through this one, sorting its queue's due tasks: slower
-- until it is replaced, never wrong.
--
-- Built concurrently, outside a transaction, so that writes go on while it
-- builds (see doc.go).
DROP INDEX CONCURRENTLY IF EXISTS tasks_runnable_tenant_idx;
CREATE INDEX CONCURRENTLY tasks_runnable_tenant_idx ON tasks (queue, tenant, priority, run_at, id)
    WHERE state IN ('queued', 'retrying');
DROP INDEX CONCURRENTLY IF EXISTS tasks_runnable_idx;

-- agentledger_tenant_room locks the share rows of the capped tenants named
-- (in name order, so that claims never deadlock on them) and returns how
-- many more tasks each may lease. It must be a volatile function: each of
-- its queries then takes a fresh snapshot, so the count, made once the lock
-- is held, sees every task the claims that held it before leased (a count
-- in the claim statement itself would see its snapshot, taken before the
-- wait). The lock is held until the claim commits: claims that may lease a
-- capped tenant's tasks take turns; the others never wait.
--
-- The count reads the running tasks of every tenant (tasks_leased_idx):
-- an index of running tasks by tenant would make it a look-up, but would
-- cost every claim, capped or not, one more index entry per task.
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

-- +goose Down
DROP FUNCTION IF EXISTS agentledger_tenant_room(text[]);
DROP INDEX CONCURRENTLY IF EXISTS tasks_runnable_idx;
CREATE INDEX CONCURRENTLY tasks_runnable_idx ON tasks (queue, priority, run_at, id)
    WHERE state IN ('queued', 'retrying');
DROP INDEX CONCURRENTLY IF EXISTS tasks_runnable_tenant_idx;
DROP TABLE IF EXISTS tenant_shares;
