-- +goose Up
-- A crowd of tenants takes turns in the claim (claims.claimDue): a claim
-- reads only the tenants it serves, in rotation order, so it cannot lock
-- the capped tenants' share rows in name order before it knows which it
-- will reach, as agentledger_tenant_room does. agentledger_tenant_turn
-- counts one capped tenant's room under its share row's lock, or answers
-- 0 if another claim holds that lock (that claim is serving the tenant):
-- a claim never waits on it, so claims that take the locks in rotation
-- order cannot deadlock, and the count, made under the lock in a fresh
-- snapshot (a volatile function), sees every task leased before.
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

-- +goose Down
DROP FUNCTION IF EXISTS agentledger_tenant_turn(text);
