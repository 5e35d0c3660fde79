-- +goose Up
-- A success is recorded by its task's row. A task that succeeded holds
-- everything its attempt record would (lease_token, attempt, generation,
-- lease_owner, attempted_at, finished_at), so claims.succeed no longer
-- writes one: a heap tuple and an index entry less for every task, most of
-- which succeed on their first try. The record is written from the row's
-- old version when the row stops holding it (a replay, a compensation,
-- anything that moves its state, token or times), and attempt_records is
-- what readers read: every written record, and the success each
-- succeeded row holds. A row whose success was recorded before this
-- migration (or by a daemon of an older release, still running during an
-- upgrade) is not counted twice: the view and the trigger both pass over
-- a token already recorded.
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

CREATE OR REPLACE VIEW attempt_records AS
SELECT task_id, lease_token, attempt, generation, worker, started_at, ended_at, outcome, error
FROM task_attempts
UNION ALL
SELECT t.id, t.lease_token, t.attempt, t.generation, coalesce(t.lease_owner, ''),
    coalesce(t.attempted_at, t.finished_at, t.updated_at), t.finished_at, 'succeeded', NULL::text
FROM tasks t
WHERE t.state = 'succeeded'
    AND NOT EXISTS (SELECT FROM task_attempts a WHERE a.task_id = t.id AND a.lease_token = t.lease_token);

-- +goose Down
-- Stop every daemon of this release first: one still running would write
-- successes with no record and fail on the dropped view. The lock keeps
-- a success from committing between the copy and the drop.
LOCK TABLE tasks IN EXCLUSIVE MODE;
INSERT INTO task_attempts (task_id, lease_token, attempt, generation, worker, started_at, ended_at, outcome)
SELECT task_id, lease_token, attempt, generation, worker, started_at, ended_at, outcome
FROM attempt_records r
WHERE NOT EXISTS (SELECT FROM task_attempts a WHERE a.task_id = r.task_id AND a.lease_token = r.lease_token)
ON CONFLICT (task_id, lease_token) DO NOTHING;
DROP VIEW IF EXISTS attempt_records;
DROP TRIGGER IF EXISTS tasks_record_success ON tasks;
DROP FUNCTION IF EXISTS agentledger_record_success();
