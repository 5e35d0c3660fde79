-- +goose Up
-- The SHA-256 of each delivery's raw (signed) body. A captured delivery sent
-- again under a fresh delivery id is the same delivery; a delivery id sent
-- again with another body is a conflict. Rows from before have none.
ALTER TABLE inbox ADD COLUMN body_hash bytea;
CREATE UNIQUE INDEX inbox_body_idx ON inbox (source, body_hash);

-- +goose Down
DROP INDEX inbox_body_idx;
ALTER TABLE inbox DROP COLUMN body_hash;
