-- claims.lookupKeys: lookupKeysSQL of package claims, as Store.Enqueue, Store.EnqueueStart and Store.EnqueueBatch send it (2 parameters); go test ./claims -run TestGoldenSQL -update rewrites this file
/* claims.lookupKeys */
SELECT id, tenant, queue, kind, payload, priority, run_at, state,
	attempt, max_attempts, generation, lease_owner, lease_token, lease_expires_at,
	cancel_requested_at, result, last_error, submission_key, created_at,
	updated_at, finished_at, wait_reason, compensation, traceparent, replay_traceparent,
	generation_claims, needs, request_hash
FROM tasks t
JOIN unnest($1::text[], $2::text[]) AS k(tenant, submission_key)
	USING (tenant, submission_key)
WHERE (SELECT current_setting('synchronous_standby_names') = ''
	OR pg_logical_emit_message(true, 'agentledger', '') IS NOT NULL)
