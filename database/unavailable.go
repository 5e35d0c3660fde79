package database

import "github.com/agentledger/agentledger/dbaway"

// AwayBackoff spaces the tries of work that waits for the database to
// come back (Unavailable): 100ms, 200ms … 2s. It is dbaway.Backoff.
var AwayBackoff = dbaway.Backoff

// Unavailable reports whether err is the database being away for now:
// see dbaway.Unavailable, which the core imports so as not to link this
// package's embedded cluster.
func Unavailable(err error) bool { return dbaway.Unavailable(err) }

// ServerUnavailable reports whether SQLSTATE code is the server saying it
// cannot serve now but may soon: see dbaway.ServerUnavailable.
func ServerUnavailable(code string) bool { return dbaway.ServerUnavailable(code) }
