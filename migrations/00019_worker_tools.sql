-- +goose Up
-- A worker pool announces the tools its steps and agent tasks may call
-- (built-in, registered and MCP tools), so that a submitted steps task
-- naming a tool no live worker serves is refused before it is queued.
-- NULL: a pool of an older version, whose tools are not known.
ALTER TABLE workers ADD COLUMN tools text[];

-- +goose Down
ALTER TABLE workers DROP COLUMN tools;
