// Package testdb gives each test its own migrated PostgreSQL database.
//
// With TEST_DATABASE_URL set, databases are created on that server. Without
// it, the embedded cluster (package pgembed) is started once in a state
// directory shared by every test binary of the run (AGENTLEDGER_TEST_STATE_DIR,
// default <tmp>/agentledger-test-<uid>); the last binary to finish stops it.
//
// A template database is migrated once per schema version (its name carries
// migrations.Fingerprint) under an advisory lock, and each test clones it with
// CREATE DATABASE … TEMPLATE, so tests run in parallel in isolation.
// A test's ids start past what a 32-bit integer holds, as after a
// failover or a restore, unless it asks for small ones (SmallIDsURL).
package testdb
