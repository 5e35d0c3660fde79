// Package syncwait notes the connections on which a commit's wait for a
// synchronous standby was cancelled.
//
// A query cancel that reaches a backend while its commit waits for the
// standby (pg_cancel_backend, a statement_timeout) does not undo the
// commit: PostgreSQL commits locally, says so in a WARNING ("canceling
// wait for synchronous replication … The transaction has already
// committed locally, but might not have been replicated to the
// standby"), and reports success. A failover then loses the commit. A
// claim or an eager start whose commit that was must not start its tasks
// (their effects would outlive them): OnNotice, the pool's notice
// handler, marks the connection, and the claim made on it asks
// Cancelled. A terminated wait needs none of this: it ends the
// connection, and the statement fails.
//
// The warning is recognised by its SQLSTATE (01000) and the server
// function that raised it (the notice's Routine field, which the server
// sends whatever its lc_messages), or, where a proxy dropped that field,
// by its English text.
//
// A read that acknowledges what it found (a submission found again under
// its key, a stored answer replayed) adds Durable to its condition.
package syncwait

import (
	"strings"
	"sync"

	"github.com/jackc/pgx/v5/pgconn"
)

// cancelled holds the connections marked and not yet asked.
var cancelled sync.Map // *pgconn.PgConn → struct{}

// waitRoutine is the server function whose WARNING says a commit's wait
// for the standby was cancelled (PostgreSQL's syncrep.c). Its other
// WARNING, for a terminated wait, is not sent: the connection ends.
const waitRoutine = "SyncRepWaitForLSN"

// OnNotice is a pgconn.NoticeHandler: it marks c when n says a commit's
// wait for a synchronous standby was cancelled.
func OnNotice(c *pgconn.PgConn, n *pgconn.Notice) {
	if isCancelledWait(n) {
		cancelled.Store(c, struct{}{})
	}
}

// isCancelledWait reports whether n is the WARNING of a commit whose wait
// for the synchronous standby was cancelled, in any language.
func isCancelledWait(n *pgconn.Notice) bool {
	if n.Code != "01000" {
		return false
	}
	if n.Routine != "" {
		return n.Routine == waitRoutine
	}
	return strings.HasPrefix(n.Message, "canceling wait for synchronous replication")
}

// Cancelled reports whether a commit's wait for the standby was cancelled
// on c since the last call, and clears the mark.
func Cancelled(c *pgconn.PgConn) bool {
	_, ok := cancelled.LoadAndDelete(c)
	return ok
}

// Durable is a condition, true, for a statement that acknowledges rows it
// only read: on a server with synchronous standbys it writes (an
// InitPlan, once a statement), so that its commit waits for the standby
// to have everything before it, the rows read among them. What it reads
// may have been committed on the primary only (the wait of the commit
// that made it cut short, and its client retrying), and a transaction
// that wrote nothing commits without waiting. The write is an empty
// transactional logical message (prefix "agentledger"), which any role
// may emit at any wal_level: the least write that takes a transaction id
// and WAL, and leaves no row behind.
const Durable = "(SELECT current_setting('synchronous_standby_names') = ''\n" +
	"\tOR pg_logical_emit_message(true, 'agentledger', '') IS NOT NULL)"
