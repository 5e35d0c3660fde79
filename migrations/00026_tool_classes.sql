-- +goose Up
-- Worker pools announce the effect class of each tool whose class does not
-- depend on its arguments (issue 17): the submit check refuses a
-- compensation declared for a pure tool's step, as it refuses one for a
-- GET. A catalog change (a nullable column): NULL until a pool of this
-- version announces itself.
ALTER TABLE workers ADD COLUMN IF NOT EXISTS tool_classes jsonb;

-- +goose Down
ALTER TABLE workers DROP COLUMN IF EXISTS tool_classes;
