// Package migrations holds agentledger's schema as numbered, embedded SQL
// files (NNNNN_name.sql, each with a goose Up and Down section) and applies
// them with github.com/pressly/goose/v3 under a PostgreSQL advisory lock, so
// any number of daemons may start at once. Applied versions are recorded in
// the agentledger_migrations table.
package migrations
