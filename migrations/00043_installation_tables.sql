-- +goose NO TRANSACTION
-- +goose Up
-- Which tasks table the installation's identity is of, and its own table:
-- a schema migrated down to nothing and made again under the kept
-- installation (its own table the same, the tasks table another, whose
-- ids start again) is another database, and migrations.Migrator gives it
-- a new identity, so that its tasks never send the keys earlier tasks of
-- the same ids sent. A restore from a dump makes both tables anew, and
-- keeps the identity: the restored tasks' effects, sent again, must go
-- under the keys they went under.
ALTER TABLE installation ADD COLUMN IF NOT EXISTS tasks_table oid;
ALTER TABLE installation ADD COLUMN IF NOT EXISTS own_table oid;
UPDATE installation SET tasks_table = 'tasks'::regclass, own_table = 'installation'::regclass WHERE tasks_table IS NULL;

-- +goose Down
-- Kept, as the installation is (00042): a schema taken down to nothing and
-- made again is told from the tables they record.
SELECT 'the installation''s tables are kept';
