-- claims.heartbeat: heartbeatSQL of package claims, as Store.Heartbeat sends it (4 parameters); go test ./claims -run TestGoldenSQL -update rewrites this file
/* claims.heartbeat */
WITH live AS MATERIALIZED (
	SELECT u.id
	FROM (SELECT * FROM unnest($1::bigint[], $2::bigint[]) ORDER BY 1 OFFSET 0) AS u(id, token)
	CROSS JOIN LATERAL (
		SELECT FROM tasks t
		WHERE t.id = u.id AND t.lease_token = u.token AND t.lease_expires_at > coalesce($3::timestamptz, now())
		OFFSET 0
		FOR NO KEY UPDATE SKIP LOCKED
	) l
)
UPDATE tasks t SET
	lease_expires_at = coalesce($3::timestamptz, now()) + $4::interval,
	updated_at = coalesce($3::timestamptz, now())
WHERE t.id = ANY (ARRAY(SELECT id FROM live))
RETURNING t.id, t.cancel_requested_at IS NOT NULL
