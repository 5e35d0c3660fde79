-- +goose NO TRANSACTION
-- +goose Up
-- The SHA-256 of each delivery's raw (signed) body. A captured delivery sent
-- again under a fresh delivery id is the same delivery; a delivery id sent
-- again with another body is a conflict. Rows from before have none.
--
-- The index is built concurrently, outside a transaction, so that
-- deliveries are accepted while it builds (see doc.go); a build cut off
-- leaves an invalid index, dropped on the next run.
ALTER TABLE inbox ADD COLUMN IF NOT EXISTS body_hash bytea;
DROP INDEX CONCURRENTLY IF EXISTS inbox_body_idx;
CREATE UNIQUE INDEX CONCURRENTLY inbox_body_idx ON inbox (source, body_hash);

-- +goose Down
DROP INDEX CONCURRENTLY IF EXISTS inbox_body_idx;
ALTER TABLE inbox DROP COLUMN IF EXISTS body_hash;
