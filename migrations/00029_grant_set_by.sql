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

-- Every kind is written out from now on ("all_kinds": true, "kinds": []),
-- and no kind is "kinds": ["!none"] (grants.NoKinds: no kind has that
-- name), so that every version reads a grant as the same kinds: one of an
-- earlier version reads no kinds as every kind, and "!none" as a kind no
-- task has. The grants stored before, with no kinds, allowed every kind and
-- keep doing so. (The operator's grant, "all", allows every kind anyway.)
UPDATE tenant_grants SET grant_doc = grant_doc || '{"all_kinds": true, "kinds": []}'
WHERE (NOT grant_doc ? 'kinds' OR grant_doc -> 'kinds' IN ('[]', 'null'))
    AND NOT grant_doc ? 'all_kinds' AND grant_doc -> 'all' IS DISTINCT FROM 'true';

-- +goose Down
-- Back to no kinds meaning every kind: a grant of no kind (an empty kinds
-- list without all_kinds) keeps none as ["!none"], as the new code writes
-- it; one of every kind loses its kinds. Each statement can run again.
UPDATE tenant_grants SET grant_doc = grant_doc || '{"kinds": ["!none"]}'
WHERE grant_doc -> 'kinds' IN ('[]', 'null')
    AND grant_doc -> 'all_kinds' IS DISTINCT FROM 'true' AND grant_doc -> 'all' IS DISTINCT FROM 'true';
UPDATE tenant_grants SET grant_doc = grant_doc - 'kinds' WHERE grant_doc -> 'all_kinds' = 'true';
UPDATE tenant_grants SET grant_doc = grant_doc - 'all_kinds' WHERE grant_doc ? 'all_kinds';
ALTER TABLE tenant_grants DROP CONSTRAINT IF EXISTS tenant_grants_set_by_check, DROP COLUMN IF EXISTS set_by;
