package worker

import "github.com/agentledger/agentledger/dbaway"

// uncertain reports whether a finishing write that failed with err may
// have committed all the same, or may pass once the database is back (a
// cut connection, a failover): such a write is resolved by reading back
// what the attempt became, never by guessing.
func uncertain(err error) bool { return dbaway.Unavailable(err) }
