package claims

import (
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentledger/agentledger/internal/syncwait"
)

// UnreplicatedError is a claim's or an eager start's refusal of the tasks
// its statement leased, whose commit's wait for the synchronous standby
// was cancelled (package syncwait): they are leased on this server only,
// and a failover could lose them after their effects went out. Nothing
// starts them; their leases run out, and a later claim, whose commit
// reaches the standby, takes them again.
type UnreplicatedError struct {
	Tasks int // leased and not started
}

func (e *UnreplicatedError) Error() string {
	return fmt.Sprintf("committed on the primary only (its wait for the synchronous standby was cancelled): "+
		"%d leased tasks are not started and wait out their leases", e.Tasks)
}

// statementConn is the connection a statement on db runs and commits on,
// or nil: for a pool (whichever connection it lends) and for a
// transaction (whose commit is its caller's).
func statementConn(db DB) *pgconn.PgConn {
	switch c := db.(type) {
	case *pgxpool.Conn:
		return c.Conn().PgConn()
	case *pgx.Conn:
		return c.PgConn()
	}
	return nil
}

// watchCommit clears the mark a statement on db's connection left before
// (package syncwait) and returns the check to make after the next one:
// whether its commit's wait for the standby was cancelled. On a pool or a
// transaction (statementConn) the check says false.
func watchCommit(db DB) (cancelled func() bool) {
	c := statementConn(db)
	if c == nil {
		return func() bool { return false }
	}
	syncwait.Cancelled(c)
	return func() bool { return syncwait.Cancelled(c) }
}
