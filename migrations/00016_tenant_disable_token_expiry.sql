-- +goose Up
-- An operator can disable a tenant (its tokens are refused until it is
-- enabled again) and give a token an expiry.
ALTER TABLE tenants ADD COLUMN disabled_at timestamptz;
ALTER TABLE api_tokens ADD COLUMN expires_at timestamptz;

-- +goose Down
ALTER TABLE api_tokens DROP COLUMN expires_at;
ALTER TABLE tenants DROP COLUMN disabled_at;
