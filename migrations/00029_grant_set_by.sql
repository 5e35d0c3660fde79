-- +goose NO TRANSACTION
-- +goose Up
-- Issue 30. Who set each grant last: 'operator' (agentctl) or 'config' (a
-- daemon's [grant.<tenant>] table at its start). A daemon's configuration
-- replaces only a grant it set itself (or one stored before this column,
-- NULL, as every start did before); an operator's grant stands until the
-- operator deletes it.
--
-- Outside a transaction, the check added NOT VALID and then validated, as
-- 00022 does: every statement can run again if the migration stops.
ALTER TABLE tenant_grants ADD COLUMN IF NOT EXISTS set_by text;
ALTER TABLE tenant_grants DROP CONSTRAINT IF EXISTS tenant_grants_set_by_check,
    ADD CONSTRAINT tenant_grants_set_by_check CHECK (set_by IN ('operator', 'config')) NOT VALID;
ALTER TABLE tenant_grants VALIDATE CONSTRAINT tenant_grants_set_by_check;

-- Every kind is written out from now on ("all_kinds": true): a grant whose
-- kinds list is empty allows none, where it used to allow every kind. The
-- grants stored before, with no kinds, allowed every kind and keep doing
-- so. (The operator's grant, "all", allows every kind anyway.) A daemon of
-- an earlier version ignores all_kinds and reads no kinds as every kind,
-- as before.
UPDATE tenant_grants SET grant_doc = grant_doc || '{"all_kinds": true, "kinds": []}'
WHERE (NOT grant_doc ? 'kinds' OR grant_doc -> 'kinds' IN ('[]', 'null'))
    AND NOT grant_doc ? 'all_kinds' AND grant_doc -> 'all' IS DISTINCT FROM 'true';

-- +goose Down
UPDATE tenant_grants SET grant_doc = grant_doc - 'all_kinds' - 'kinds' WHERE grant_doc -> 'all_kinds' = 'true';
ALTER TABLE tenant_grants DROP CONSTRAINT IF EXISTS tenant_grants_set_by_check, DROP COLUMN IF EXISTS set_by;
