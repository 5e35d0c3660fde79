-- +goose Up
-- The two row triggers on tasks test less in their WHEN clauses and more
-- in their functions. PostgreSQL reads a trigger's WHEN clause back from
-- its stored node text and compiles it for every statement that updates
-- the table, whether that statement changes one row or a thousand, and
-- whether or not the trigger then fires: with the clauses of 00035 and
-- 00038 (4.8 KB of node text) a one-row update took 89 µs against 78 with
-- these (1.3 KB), a tax on every claim, completion and heartbeat. Each
-- clause keeps the test that passes over the rows that never fire (a row
-- that was not a success; a task with no parent, or not at an end); the
-- rest of each test moves into its function, which runs only for the
-- rows that pass the clause. tasks_record_success now names the columns a
-- success is made of: a statement that sets none of them (the ledger's
-- expiry marking finished tasks, say) skips it without reading its
-- clause, where the old clause was evaluated for each of its rows. What
-- fires and what it writes are the same.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION agentledger_record_success() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.state <> 'succeeded' OR NEW.lease_token <> OLD.lease_token
        OR NEW.generation <> OLD.generation OR NEW.attempt <> OLD.attempt
        OR NEW.lease_owner IS DISTINCT FROM OLD.lease_owner OR NEW.attempted_at IS DISTINCT FROM OLD.attempted_at
        OR NEW.finished_at IS DISTINCT FROM OLD.finished_at THEN
        INSERT INTO task_attempts (task_id, lease_token, attempt, generation, worker, started_at, ended_at, outcome)
        VALUES (OLD.id, OLD.lease_token, OLD.attempt, OLD.generation, coalesce(OLD.lease_owner, ''),
            coalesce(OLD.attempted_at, OLD.finished_at, OLD.updated_at), OLD.finished_at, 'succeeded')
        ON CONFLICT (task_id, lease_token) DO NOTHING;
    END IF;
    RETURN NULL;
END $$;
-- +goose StatementEnd
CREATE OR REPLACE TRIGGER tasks_record_success
    AFTER UPDATE OF state, lease_token, generation, attempt, lease_owner, attempted_at, finished_at ON tasks
    FOR EACH ROW WHEN (OLD.state = 'succeeded')
    EXECUTE FUNCTION agentledger_record_success();

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION agentledger_wake_parent() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE q text;
BEGIN
    IF OLD.state IS NOT DISTINCT FROM NEW.state THEN
        RETURN NULL;
    END IF;
    UPDATE tasks t SET
        state = CASE WHEN t.state = 'waiting' THEN 'queued' ELSE t.state END,
        run_at = CASE WHEN t.state = 'running' THEN greatest(now(), t.attempted_at + interval '1 microsecond') ELSE now() END,
        updated_at = now()
    WHERE t.id = NEW.parent_id AND t.generation = NEW.parent_generation AND t.state IN ('waiting', 'running')
    RETURNING CASE WHEN t.state = 'queued' THEN t.queue END INTO q;
    IF q IS NOT NULL THEN
        PERFORM pg_notify('agentledger_task_insert', q);
    END IF;
    RETURN NULL;
END $$;
-- +goose StatementEnd
CREATE OR REPLACE TRIGGER tasks_wake_parent AFTER UPDATE OF state ON tasks FOR EACH ROW
    WHEN (NEW.parent_id IS NOT NULL AND NEW.state = ANY ('{succeeded,dead,cancelled,compensated}'::text[]))
    EXECUTE FUNCTION agentledger_wake_parent();

-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION agentledger_record_success() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO task_attempts (task_id, lease_token, attempt, generation, worker, started_at, ended_at, outcome)
    VALUES (OLD.id, OLD.lease_token, OLD.attempt, OLD.generation, coalesce(OLD.lease_owner, ''),
        coalesce(OLD.attempted_at, OLD.finished_at, OLD.updated_at), OLD.finished_at, 'succeeded')
    ON CONFLICT (task_id, lease_token) DO NOTHING;
    RETURN NULL;
END $$;
-- +goose StatementEnd
CREATE OR REPLACE TRIGGER tasks_record_success AFTER UPDATE ON tasks FOR EACH ROW
    WHEN (OLD.state = 'succeeded' AND (NEW.state <> 'succeeded' OR NEW.lease_token <> OLD.lease_token
        OR NEW.generation <> OLD.generation OR NEW.attempt <> OLD.attempt
        OR NEW.lease_owner IS DISTINCT FROM OLD.lease_owner OR NEW.attempted_at IS DISTINCT FROM OLD.attempted_at
        OR NEW.finished_at IS DISTINCT FROM OLD.finished_at))
    EXECUTE FUNCTION agentledger_record_success();
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION agentledger_wake_parent() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE q text;
BEGIN
    UPDATE tasks t SET
        state = CASE WHEN t.state = 'waiting' THEN 'queued' ELSE t.state END,
        run_at = CASE WHEN t.state = 'running' THEN greatest(now(), t.attempted_at + interval '1 microsecond') ELSE now() END,
        updated_at = now()
    WHERE t.id = NEW.parent_id AND t.generation = NEW.parent_generation AND t.state IN ('waiting', 'running')
    RETURNING CASE WHEN t.state = 'queued' THEN t.queue END INTO q;
    IF q IS NOT NULL THEN
        PERFORM pg_notify('agentledger_task_insert', q);
    END IF;
    RETURN NULL;
END $$;
-- +goose StatementEnd
CREATE OR REPLACE TRIGGER tasks_wake_parent AFTER UPDATE OF state ON tasks FOR EACH ROW
    WHEN (NEW.parent_id IS NOT NULL AND OLD.state IS DISTINCT FROM NEW.state
        AND NEW.state IN ('succeeded', 'dead', 'cancelled', 'compensated'))
    EXECUTE FUNCTION agentledger_wake_parent();
