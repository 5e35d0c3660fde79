package ledger

import (
	"context"
	"fmt"
	"strings"

	"github.com/agentledger/agentledger"
)

// Resolution is an operator's decision about an effect of unknown outcome.
type Resolution struct {
	// Done marks the effect performed (the operator checked downstream);
	// Result, if set, is stored as its result.
	Done   bool
	Result *Result
	// Retry allows the next attempt to perform the effect once more.
	Retry bool
	// Note says why; required.
	Note string
}

// Resolve settles an unknown effect of tenant, identified by operation and
// key. The task stays needs_attention until it is replayed (claims.Requeue
// with claims.Replay). ErrNotFound when no such unknown effect exists.
func (l *Ledger) Resolve(ctx context.Context, tenant, operation, key string, r Resolution) error {
	switch {
	case r.Done == r.Retry:
		return agentledger.Invalid("resolution", "choose exactly one of done or retry")
	case strings.TrimSpace(r.Note) == "":
		return agentledger.Invalid("note", "say why the effect is resolved this way")
	}
	var err error
	var n int64
	if r.Done {
		var body []byte
		if r.Result != nil {
			if body, err = encodeResult(*r.Result); err != nil {
				return err
			}
		}
		tag, e := l.db.Exec(ctx, resolveDoneSQL, tenant, operation, key, r.Note, nullJSON(body))
		n, err = tag.RowsAffected(), e
	} else {
		tag, e := l.db.Exec(ctx, resolveRetrySQL, tenant, operation, key, r.Note)
		n, err = tag.RowsAffected(), e
	}
	if err != nil {
		return fmt.Errorf("resolve: %w", err)
	}
	if n == 0 {
		return agentledger.Errorf(agentledger.CodeNotFound, "no unknown effect %s of operation %q for tenant %q", short(key), operation, tenant)
	}
	return nil
}

// nullJSON is JSON as a query argument: NULL when empty.
func nullJSON(b []byte) *string {
	if len(b) == 0 {
		return nil
	}
	s := string(b)
	return &s
}

// Reopen lets a failed effect of tenant, identified by operation and key,
// be performed again, once its cause is fixed (a notification whose bot
// token was wrong): its row goes back to pending, with note and the old
// error kept as its note, and the next Do under the key recovers it by its
// class — a reconcilable effect is looked up downstream before it is
// performed, a keyed one is sent again under its key. Only those two
// classes reopen: an unsafe effect performed blindly again could happen
// twice. It reports whether a row was reopened (false: no failed
// reconcilable or keyed effect has that key).
func (l *Ledger) Reopen(ctx context.Context, tenant, operation, key, note string) (bool, error) {
	if strings.TrimSpace(note) == "" {
		return false, agentledger.Invalid("note", "say why the effect is performed again")
	}
	tag, err := l.db.Exec(ctx, reopenSQL, tenant, operation, key, note)
	if err != nil {
		return false, fmt.Errorf("ledger: reopen effect %s: %w", short(key), err)
	}
	return tag.RowsAffected() == 1, nil
}

// ReopenAs is Reopen for a failed reconcilable effect that is to be
// performed again with another request: request's hash replaces the one
// recorded under the key. Only a failed effect changes — the downstream
// refused it and performed nothing — so no call that went out under the
// old request can be sent again under the new one (invariant I4 holds
// for every call made). A rule's post that its channel refused
// (channel_not_found) is the case: delivered again, it goes to the
// channel the rule names now. It reports whether a row was reopened.
func (l *Ledger) ReopenAs(ctx context.Context, tenant, operation, key string, request []byte, note string) (bool, error) {
	if strings.TrimSpace(note) == "" {
		return false, agentledger.Invalid("note", "say why the effect is performed again")
	}
	hash, err := RequestHash(request)
	if err != nil {
		return false, agentledger.Invalid("request", "%v", err)
	}
	tag, err := l.db.Exec(ctx, reopenAsSQL, tenant, operation, key, note, hash)
	if err != nil {
		return false, fmt.Errorf("ledger: reopen effect %s: %w", short(key), err)
	}
	return tag.RowsAffected() == 1, nil
}
