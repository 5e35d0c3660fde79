-- +goose NO TRANSACTION
-- +goose Up
-- Operators look effects up by a prefix of their key (ledger.Find, agentctl
-- ledger --key) of at least 6 characters; without an index that read the
-- whole table. Keys are SHA-256 hex, so their first 6 characters tell about
-- 16.7 million groups apart: an equality look-up on them finds a prefix's
-- few rows, whatever its length, from an index a quarter the size of one
-- on whole keys (each effect's insert writes one more, small, entry).
--
-- Built concurrently, outside a transaction, so that effects are recorded
-- while it builds (see doc.go); a build cut off leaves an invalid index,
-- dropped on the next run.
DROP INDEX CONCURRENTLY IF EXISTS ledger_key_prefix_idx;
CREATE INDEX CONCURRENTLY ledger_key_prefix_idx ON ledger (left(effect_key, 6));

-- +goose Down
DROP INDEX CONCURRENTLY IF EXISTS ledger_key_prefix_idx;
