-- claims.current: currentSQL of package claims, as Store.Heartbeat sends it (3 parameters); go test ./claims -run TestGoldenSQL -update rewrites this file
/* claims.current */
WITH live AS MATERIALIZED (
	SELECT u.id
	FROM (SELECT * FROM unnest($1::bigint[], $2::bigint[]) ORDER BY 1 OFFSET 0) AS u(id, token)
	CROSS JOIN LATERAL (
		SELECT FROM tasks t
		WHERE t.id = u.id AND t.lease_token = u.token AND t.lease_expires_at > coalesce($3::timestamptz, now())
		OFFSET 0
		
	) l
)
SELECT id FROM live
