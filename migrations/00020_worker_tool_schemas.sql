-- +goose Up
-- A worker pool announces, with the names of its tools (00019), their
-- parameter schemas ({"notify": {"type": "object", …}, …}), so that a
-- submitted steps task whose arguments do not fit its tool is refused
-- before it is queued. NULL: a pool of an older version.
ALTER TABLE workers ADD COLUMN tool_schemas jsonb;

-- +goose Down
ALTER TABLE workers DROP COLUMN tool_schemas;
