-- +goose Up
-- What each tenant's tasks may reach: kinds, tools, hosts (and whether the
-- operator's secret headers go with them), Slack channels, models. A tenant
-- without a row has the default grant: every kind, no tool, no model. The
-- operator's tenant ('default': agentctl, cron and webhooks) without a row
-- may reach everything.
CREATE TABLE tenant_grants (
    tenant     text        PRIMARY KEY,
    grant_doc  jsonb       NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now()
);

-- +goose Down
DROP TABLE tenant_grants;
