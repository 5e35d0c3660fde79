package tenants

// All SQL of the tenants and api_tokens tables lives here.

const tenantColumns = `name, created_at, disabled_at`

// insertTenantSQL adds a tenant; an existing name returns no row.
const insertTenantSQL = `/* tenants.insertTenant */
INSERT INTO tenants (name) VALUES ($1)
ON CONFLICT (name) DO NOTHING
RETURNING ` + tenantColumns

const listTenantsSQL = `/* tenants.listTenants */ SELECT ` + tenantColumns + ` FROM tenants ORDER BY name`

// getTenantSQL reads tenant $1; an unknown tenant returns no row.
const getTenantSQL = `/* tenants.getTenant */ SELECT ` + tenantColumns + ` FROM tenants WHERE name = $1`

// setDisabledSQL disables tenant $1 ($2 true; an already disabled tenant
// keeps its first time) or enables it; an unknown tenant returns no row.
const setDisabledSQL = `/* tenants.setDisabled */
UPDATE tenants SET disabled_at = CASE WHEN $2 THEN coalesce(disabled_at, now()) END
WHERE name = $1
RETURNING ` + tenantColumns

const tenantExistsSQL = `/* tenants.tenantExists */ SELECT EXISTS (SELECT 1 FROM tenants WHERE name = $1)`

const tokenColumns = `id, tenant, name, prefix, created_at, last_used_at, revoked_at, expires_at`

// insertTokenSQL adds a token to tenant $1; an unknown tenant returns no row.
const insertTokenSQL = `/* tenants.insertToken */
INSERT INTO api_tokens (tenant, name, token_hash, prefix, expires_at)
SELECT name, $2, $3, $4, now() + $5::interval FROM tenants WHERE name = $1
RETURNING ` + tokenColumns

// listTokensSQL lists the tokens of tenant $1, or of every tenant when it is
// empty, oldest first.
const listTokensSQL = `/* tenants.listTokens */
SELECT ` + tokenColumns + ` FROM api_tokens
WHERE ($1 = '' OR tenant = $1)
ORDER BY id`

// revokeByIDSQL revokes token $1 unless it is revoked already.
const revokeByIDSQL = `/* tenants.revokeByID */
UPDATE api_tokens SET revoked_at = now()
WHERE id = $1 AND revoked_at IS NULL
RETURNING ` + tokenColumns

// revokeByPrefixSQL revokes the token with prefix $1, unless it is revoked
// already or the prefix is shared (then nothing is revoked).
const revokeByPrefixSQL = `/* tenants.revokeByPrefix */
UPDATE api_tokens SET revoked_at = now()
WHERE prefix = $1 AND revoked_at IS NULL
  AND (SELECT count(*) FROM api_tokens WHERE prefix = $1) = 1
RETURNING ` + tokenColumns

// findTokensSQL looks tokens up by id ($1, 0 for none) or prefix ($2), to
// explain a revoke that changed nothing.
const findTokensSQL = `/* tenants.findTokens */
SELECT ` + tokenColumns + ` FROM api_tokens
WHERE id = $1 OR prefix = $2
ORDER BY id
LIMIT 2`

// authenticateSQL finds the token with hash $1. In the same statement it
// records the use, at most once a minute per token and without waiting for
// a row lock (SKIP LOCKED): a busy token costs no write on most requests and
// concurrent requests never queue behind one another (a data-modifying CTE
// runs whether or not the query reads it). A token that may not be used
// (revoked, expired, its tenant disabled) is returned with why, not
// touched, so the caller can log it.
const authenticateSQL = `/* tenants.authenticate */
WITH tok AS (
	SELECT a.id, a.tenant, CASE
		WHEN a.revoked_at IS NOT NULL THEN 'revoked'
		WHEN a.expires_at <= now() THEN 'expired'
		WHEN t.disabled_at IS NOT NULL THEN 'tenant disabled'
		ELSE '' END AS refused
	FROM api_tokens a JOIN tenants t ON t.name = a.tenant
	WHERE a.token_hash = $1
),
stale AS (
	SELECT a.id FROM api_tokens a JOIN tok ON a.id = tok.id
	WHERE tok.refused = '' AND (a.last_used_at IS NULL OR a.last_used_at < now() - interval '1 minute')
	FOR NO KEY UPDATE OF a SKIP LOCKED
),
touch AS (
	UPDATE api_tokens a SET last_used_at = now() FROM stale WHERE a.id = stale.id
	RETURNING a.id
)
SELECT tenant, refused FROM tok`

const shareColumns = `tenant, weight, max_running, source, updated_at`

// putShareSQL stores tenant $1's share, replacing any. An operator's share
// ($6 false) is stored only for the operator's tenant or one that exists;
// otherwise no row is returned. A configured one ($6 true) is stored for a
// tenant to come too, and never replaces an operator's (no row returned).
const putShareSQL = `/* tenants.putShare */
INSERT INTO tenant_shares (tenant, weight, max_running, source, updated_at)
SELECT $1, $2, $3, $4, now()
WHERE $6 OR $1 = $5 OR EXISTS (SELECT 1 FROM tenants WHERE name = $1)
ON CONFLICT (tenant) DO UPDATE SET weight = EXCLUDED.weight, max_running = EXCLUDED.max_running,
	source = EXCLUDED.source, updated_at = EXCLUDED.updated_at
	WHERE NOT $6 OR tenant_shares.source <> 'operator'
RETURNING ` + shareColumns

// getShareSQL reads tenant $1's share.
const getShareSQL = `/* tenants.getShare */ SELECT ` + shareColumns + ` FROM tenant_shares WHERE tenant = $1`

// deleteShareSQL removes tenant $1's share; none stored returns no row.
const deleteShareSQL = `/* tenants.deleteShare */ DELETE FROM tenant_shares WHERE tenant = $1 RETURNING ` + shareColumns

const listSharesSQL = `/* tenants.listShares */ SELECT ` + shareColumns + ` FROM tenant_shares ORDER BY tenant`
