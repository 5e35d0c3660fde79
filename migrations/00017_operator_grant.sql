-- +goose Up
-- The operator's tenant ('default': agentctl, cron and webhook tasks) gets
-- its grant written out, so that `agentctl tenant show default` shows it
-- and `tenant revoke default` can narrow it.
INSERT INTO tenant_grants (tenant, grant_doc) VALUES ('default', '{"all": true}')
ON CONFLICT (tenant) DO NOTHING;

-- +goose Down
DELETE FROM tenant_grants WHERE tenant = 'default' AND grant_doc = '{"all": true}';
