// Package database opens agentledger's connection pool: to DATABASE_URL when
// given, otherwise to the embedded cluster of package pgembed in the state
// directory, which agentd and agentctl share.
package database
