-- +goose Up
-- tasks_names (00044) fires under session_replication_role = replica too,
-- as the CHECK constraint it took the names' rules from held there: a
-- bulk fix run as a replica, or a logical replication apply, is held to
-- the rules as any other write. (An operator's DISABLE TRIGGER is a
-- choice to drop the rules, as dropping a constraint would be.)
ALTER TABLE tasks ENABLE ALWAYS TRIGGER tasks_names;

-- +goose Down
ALTER TABLE tasks ENABLE TRIGGER tasks_names;
