-- +goose Up
-- A mixed fleet: each worker pool announces what it can run beyond its
-- kinds (caps: "tool:open_ticket", "mcp:shop", "http_request@https://api.example:443",
-- "model"), and a task stores what it needs of them (needs, sorted; NULL
-- when it needs nothing but its kind). A claim takes only the tasks whose
-- needs its pool's caps contain. Both columns are nullable without a
-- default, so adding them rewrites nothing.
ALTER TABLE workers ADD COLUMN caps text[];
ALTER TABLE tasks ADD COLUMN needs text[];

-- +goose Down
ALTER TABLE tasks DROP COLUMN needs;
ALTER TABLE workers DROP COLUMN caps;
