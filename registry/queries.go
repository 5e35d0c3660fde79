package registry

// All SQL of the workers and kinds tables lives here. $now is always
// coalesce($n::timestamptz, now()) so tests can pin the clock. The names
// in their leading comments keep the claims. prefix they had when they
// lived in claims: the statements PostgreSQL receives, and the names
// pg_stat_statements and agentbench's reports show, stay as they were.

// workersSQL lists the worker pools that announced themselves within
// PruneAfter ($3) and the holders of leases (a registration older than
// that is as good as pruned: its holder shows by its leases): how many
// tasks each holds, its latest sign of life (its announcement, a heartbeat or a claim:
// both bump updated_at), how many of its leases expired (it died or
// stalled), what it announced, whether it is live (announced within $2)
// and when its registration is pruned. $1 is the clock.
const workersSQL = `/* claims.workers */
WITH leases AS (
	SELECT lease_owner AS id, count(*) AS tasks, max(updated_at) AS renewed, min(lease_expires_at) AS next_expiry,
		count(*) FILTER (WHERE lease_expires_at <= coalesce($1::timestamptz, now())) AS expired
	FROM tasks WHERE state = 'running'
	GROUP BY lease_owner
)
SELECT coalesce(w.id, l.id), coalesce(l.tasks, 0),
	greatest(w.seen_at, l.renewed), l.next_expiry, coalesce(l.expired, 0),
	w.started_at, coalesce(w.host, ''), coalesce(w.queues, '{}'), w.mcp_servers,
	coalesce(w.kinds, '{}'), coalesce(w.tools, '{}'), w.caps,
	coalesce(w.seen_at > coalesce($1::timestamptz, now()) - $2::interval, false),
	w.seen_at + $3::interval
FROM (SELECT * FROM workers WHERE seen_at > coalesce($1::timestamptz, now()) - $3::interval) w
	FULL JOIN leases l ON l.id = w.id
ORDER BY 1`

// liveWorkersSQL lists the worker pools that announced themselves within
// $2 ($1 is the clock): what the submit check asks about.
const liveWorkersSQL = `/* claims.liveWorkers */
SELECT id, host, started_at, seen_at, queues, kinds, coalesce(tools, '{}'), mcp_servers, tool_classes, caps FROM workers
WHERE seen_at > coalesce($1::timestamptz, now()) - $2::interval
ORDER BY id`

// registerSQL registers or refreshes a worker pool ($8 is the clock) and
// prunes the registrations not refreshed for $9, skipping rows another
// statement holds (the next registration prunes them). $11 are the classes
// of its tools that have one whatever their arguments; $10 its tools'
// schemas and $13 its typed kinds' payload schemas: a refresh that brings
// the same ones keeps the stored value (PostgreSQL reuses its out-of-line
// copy) instead of writing another every 10 s.
const registerSQL = `/* claims.register */
WITH pruned AS (
	DELETE FROM workers WHERE id IN (
		SELECT id FROM workers
		WHERE seen_at < coalesce($8::timestamptz, now()) - $9::interval AND id <> $1
		FOR UPDATE SKIP LOCKED)
)
INSERT INTO workers (id, host, pid, queues, kinds, mcp_servers, tools, tool_schemas, tool_classes, caps, kind_schemas, started_at, seen_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $10, $11, $12, $13, coalesce($8::timestamptz, now()), coalesce($8::timestamptz, now()))
ON CONFLICT (id) DO UPDATE SET seen_at = EXCLUDED.seen_at, host = EXCLUDED.host, pid = EXCLUDED.pid,
	queues = EXCLUDED.queues, kinds = EXCLUDED.kinds, mcp_servers = EXCLUDED.mcp_servers, tools = EXCLUDED.tools,
	tool_classes = EXCLUDED.tool_classes, caps = EXCLUDED.caps,
	tool_schemas = CASE WHEN workers.tool_schemas IS NOT DISTINCT FROM EXCLUDED.tool_schemas
		THEN workers.tool_schemas ELSE EXCLUDED.tool_schemas END,
	kind_schemas = CASE WHEN workers.kind_schemas IS NOT DISTINCT FROM EXCLUDED.kind_schemas
		THEN workers.kind_schemas ELSE EXCLUDED.kind_schemas END`

// toolSchemasSQL reads the schemas that pools $1 announced for tools $2.
const toolSchemasSQL = `/* claims.toolSchemas */
SELECT w.id, t.name, w.tool_schemas -> t.name
FROM workers w, unnest($2::text[]) AS t(name)
WHERE w.id = ANY ($1::text[]) AND w.tool_schemas -> t.name IS NOT NULL
ORDER BY w.id, t.name`

// registrationSQL reads worker $1's host and process and how long ago
// ($2 is the clock) it last announced itself.
const registrationSQL = `/* claims.registration */
SELECT coalesce(host, ''), coalesce(pid, 0), coalesce($2::timestamptz, now()) - seen_at FROM workers WHERE id = $1`

// retireSQL removes a pool that stops.
const retireSQL = `/* claims.retire */ DELETE FROM workers WHERE id = $1`

// publishKindsSQL upserts the payload schemas $2 of kinds $1, published by
// worker $3.
const publishKindsSQL = `/* claims.publishKinds */
INSERT INTO kinds (name, payload_schema, published_by, updated_at)
SELECT u.name, u.schema::jsonb, $3, now() FROM unnest($1::text[], $2::text[]) AS u(name, schema)
ON CONFLICT (name) DO UPDATE SET payload_schema = EXCLUDED.payload_schema,
	published_by = EXCLUDED.published_by, updated_at = EXCLUDED.updated_at`

// kindSchemaSQL reads the payload schema of kind $1 last published.
const kindSchemaSQL = `/* claims.kindSchema */ SELECT payload_schema FROM kinds WHERE name = $1`

// kindSchemasSQL reads the payload schemas of kind $1 that the live pools
// ($3 is the clock, $4 the window) claiming it from queue $2 announced,
// each once with the first pool to announce it. Without any: the schema
// of the pool last seen claiming it from $2 (not live now, not pruned
// yet); without that either, the schema last published for the kind
// (kinds), named by its publisher, whichever queue it claimed from.
const kindSchemasSQL = `/* claims.kindSchemas */
WITH serving AS (
	SELECT w.kind_schemas -> $1 AS schema, w.id, w.started_at, w.seen_at,
		w.seen_at > coalesce($3::timestamptz, now()) - $4::interval AS live
	FROM workers w
	WHERE $2 = ANY (w.queues) AND $1 = ANY (w.kinds) AND w.kind_schemas ? $1
),
live AS (
	SELECT DISTINCT ON (schema) schema, id FROM serving WHERE live ORDER BY schema, started_at, id
),
last_seen AS (
	SELECT schema, id FROM serving WHERE NOT EXISTS (SELECT FROM live) ORDER BY seen_at DESC, id LIMIT 1
)
SELECT schema, id, true FROM live
UNION ALL
SELECT schema, id, false FROM last_seen
UNION ALL
SELECT payload_schema, published_by, false FROM kinds
WHERE name = $1 AND NOT EXISTS (SELECT FROM live) AND NOT EXISTS (SELECT FROM last_seen)`

// kindConflictsSQL lists, for each typed kind pool $1 announced, the live
// pools ($2 is the clock, $3 the window) claiming it from a queue $1 claims
// too with another payload schema.
const kindConflictsSQL = `/* claims.kindConflicts */
SELECT k.name, o.id, array(SELECT q FROM unnest(o.queues) q WHERE q = ANY (me.queues) ORDER BY q)
FROM workers me, jsonb_each(me.kind_schemas) AS k(name, schema), workers o
WHERE me.id = $1 AND o.id <> $1
	AND o.seen_at > coalesce($2::timestamptz, now()) - $3::interval
	AND o.queues && me.queues AND k.name = ANY (o.kinds)
	AND o.kind_schemas -> k.name IS DISTINCT FROM k.schema
	AND o.kind_schemas ? k.name
ORDER BY k.name, o.id`
