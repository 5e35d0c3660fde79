-- +goose NO TRANSACTION
-- +goose Up
-- Issue 32. How many times the task was claimed in its current generation:
-- the claim adds one, a re-run (a new generation) sets it back to 0. A
-- task's first claim of a generation (1) knows that no effect of the
-- generation can be in the ledger yet, so a keyed effect skips the look-up
-- before it is performed (docs/design.md, the ledger protocol).
--
-- The tasks already there count as claimed once (the added column's value
-- for existing rows), so none of them is taken for a first claim; tasks
-- inserted from now on start at 0. Both ALTERs change the catalogue only.
ALTER TABLE tasks ADD COLUMN IF NOT EXISTS generation_claims integer NOT NULL DEFAULT 1;
ALTER TABLE tasks ALTER COLUMN generation_claims SET DEFAULT 0;

-- +goose Down
ALTER TABLE tasks DROP COLUMN IF EXISTS generation_claims;
