-- +goose NO TRANSACTION
-- +goose Up
-- A gate may name the Slack channel its requests are asked in (a payments
-- team's channel for refunds); NULL asks in the daemon's approvals channel.
-- Every daemon looks for recently decided requests every few seconds, to
-- edit their posts, whether or not it has an approvals channel: the index
-- keeps that look on the recent decisions. Outside a transaction, as 00033.
ALTER TABLE approvals ADD COLUMN IF NOT EXISTS channel text;
DROP INDEX CONCURRENTLY IF EXISTS approvals_decided_idx;
CREATE INDEX CONCURRENTLY approvals_decided_idx ON approvals (decided_at) WHERE decided_at IS NOT NULL;

-- +goose Down
DROP INDEX IF EXISTS approvals_decided_idx;
ALTER TABLE approvals DROP COLUMN IF EXISTS channel;
