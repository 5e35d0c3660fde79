-- +goose Up
-- A new cap marks the tenant's unfinished tasks that claims marked
-- uncapped (00048) through the partial indexes of their states: one
-- UPDATE over every task not finished read the whole table, finished
-- tasks included (136 ms with 500,000 finished tasks kept, and growing
-- with the retention). The triggers are asserted again as 00048 now
-- writes them (they fire as a replica too): a database that applied an
-- earlier text of 00048 gets them as well.
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
    IF newly IS NULL THEN
        RETURN NULL;
    END IF;
    -- tasks_leased_idx
    UPDATE tasks SET capped = NULL
    WHERE state = 'running' AND capped = false AND tenant = ANY (newly);
    -- tasks_runnable_tenant_idx
    UPDATE tasks SET capped = NULL
    WHERE state IN ('queued', 'retrying', 'compensating') AND capped = false AND tenant = ANY (newly);
    -- tasks_waiting_idx
    UPDATE tasks SET capped = NULL
    WHERE state = 'waiting' AND capped = false AND tenant = ANY (newly);
    -- tasks_state_created_idx
    UPDATE tasks SET capped = NULL
    WHERE state = 'needs_attention' AND capped = false AND tenant = ANY (newly);
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

-- +goose Down
-- 00048's text; its own down drops the triggers and the function.
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
