-- +goose Up
-- A worker pool announces the payload schemas of the typed kinds it
-- serves ({"refund": {"type": "object", …}}), as it does its tools'
-- (00020): a submission is checked against the schemas of the live pools
-- that would claim it (its kind, its queue), not against whichever daemon
-- published to kinds last. NULL: none, or a pool of an older version.
ALTER TABLE workers ADD COLUMN kind_schemas jsonb;

-- +goose Down
ALTER TABLE workers DROP COLUMN kind_schemas;
