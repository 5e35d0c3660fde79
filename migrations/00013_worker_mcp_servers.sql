-- +goose Up
-- A daemon announces, with its worker pool, the state of each MCP server it
-- is configured with ({"shop": "connected", …}), for agentctl workers.
ALTER TABLE workers ADD COLUMN mcp_servers jsonb;

-- +goose Down
ALTER TABLE workers DROP COLUMN mcp_servers;
