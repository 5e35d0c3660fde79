package claims

import (
	"strconv"
	"strings"

	"github.com/agentledger/agentledger"
)

// CancelChannel is the channel an operator's cancel of a running task
// notifies, on commit, with the lease it cancels ("<task id>:<lease
// token>"): the pool holding that lease stops the attempt at once, before
// its next call goes out, instead of at its next heartbeat (up to an
// interval later, while its steps went on calling). The heartbeat still
// tells a pool that heard nothing: one polling without a LISTEN session
// (--pgbouncer), or whose session was down.
const CancelChannel = "agentledger_task_cancel"

// NotifyCancel is the SQL expression that notifies CancelChannel of the
// cancel of the lease whose task id and token are the expressions id and
// token.
func NotifyCancel(id, token string) string {
	return `pg_notify('` + CancelChannel + `', ` + id + ` || ':' || ` + token + `)`
}

// CancelNotice reads a CancelChannel payload; ok is false for one that
// is not a lease.
func CancelNotice(payload string) (l agentledger.Lease, ok bool) {
	id, token, found := strings.Cut(payload, ":")
	if !found {
		return l, false
	}
	var err1, err2 error
	l.TaskID, err1 = strconv.ParseInt(id, 10, 64)
	l.Token, err2 = strconv.ParseInt(token, 10, 64)
	return l, err1 == nil && err2 == nil
}
