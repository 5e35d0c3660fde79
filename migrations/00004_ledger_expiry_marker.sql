-- +goose Up
-- When retention deletes any of a finished task's ledger rows it stamps the
-- task: a replay (same generation) would then perform those effects again,
-- so it is refused and only a re-run as a new intent remains (I7).
ALTER TABLE tasks ADD COLUMN ledger_expired_at timestamptz;

-- +goose Down
ALTER TABLE tasks DROP COLUMN ledger_expired_at;
