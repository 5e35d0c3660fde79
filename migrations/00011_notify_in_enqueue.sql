-- +goose Up
-- The enqueue statement sends its own wake-up (claims.enqueueSQL): one
-- NOTIFY per statement and queue of due tasks, as the trigger did, without
-- a trigger's transition table and PL/pgSQL loop on every insert. Every
-- insert of runnable tasks goes through that statement; a row inserted by
-- hand is found by the workers' poll.
DROP TRIGGER tasks_notify_insert ON tasks;
DROP FUNCTION agentledger_notify_insert();

-- +goose Down
-- +goose StatementBegin
CREATE FUNCTION agentledger_notify_insert() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    q text;
BEGIN
    FOR q IN SELECT DISTINCT queue FROM new_tasks WHERE run_at <= now() LOOP
        PERFORM pg_notify('agentledger_task_insert', q);
    END LOOP;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

CREATE TRIGGER tasks_notify_insert AFTER INSERT ON tasks
    REFERENCING NEW TABLE AS new_tasks
    FOR EACH STATEMENT EXECUTE FUNCTION agentledger_notify_insert();
