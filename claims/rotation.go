package claims

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/agentledger/agentledger"
)

// The rotation's cursor (ClaimHint) is the last tenant a claim served, in
// the ring's order: the tenants from the previous cursor on, then, once
// the ring wrapped, those before it. That order is the database's
// collation of the tenant column. Under the C collation (the embedded
// cluster's) it is the bytes' order, which the loop works out itself;
// under another (en_US, an ICU locale) names that mix case or punctuation
// sort otherwise, so the database is asked: a cursor worked out bytewise
// would land short of the claim's last tenant, and the next claim would
// serve some of this one's tenants again.

// Store.order values.
const (
	orderUnknown int32 = iota
	orderBytewise
	orderCollated
)

// collationSQL says whether the database orders text bytewise.
const collationSQL = `/* claims.collation */
SELECT datlocprovider = 'c' AND datcollate IN ('C', 'POSIX') FROM pg_database WHERE datname = current_database()`

// spreadSQL draws a tenant at random from the planner's histogram of
// tasks.tenant, whose bounds split the table's rows into equal parts
// (none without statistics, or with too few tenants for a histogram).
const spreadSQL = `/* claims.spread */
SELECT b[1 + floor(random() * cardinality(b))::int] FROM (
	SELECT histogram_bounds::text::text[] AS b FROM pg_stats
	WHERE tablename = 'tasks' AND attname = 'tenant' AND schemaname = (
		SELECT n.nspname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = to_regclass('tasks'))
) h
WHERE cardinality(b) > 0`

// placeRetry is how long a spread hint whose draw found no histogram
// (a new or never analysed table, or too few tenants for one) waits
// before drawing again.
const placeRetry = time.Minute

// place sets a spread hint's cursor, once, to a tenant drawn at random.
// Loops whose rotations start together at the first tenant move through
// a crowd as a pack: each claim reads tenants whose tasks the others have
// just leased, passes them over (settled) or finds them locked, and a run
// claim that finds every row it picked locked answers nothing. Ten
// daemons over 10,000 tenants claimed so at a third of one daemon's rate.
// Placed apart, they serve different parts of the ring, and as every
// loop goes round the whole ring, where it starts takes no tenant's turn
// away. Without a histogram the rotation starts at the first tenant, and
// the hint draws again after placeRetry. The histogram is of the whole
// table (finished tasks too): where the due tenants sort apart from the
// rest, several loops may still start at the same one.
//
// The draw runs in a transaction (a savepoint when s.db is one) rolled
// back at once: a failed draw costs the claim nothing, nor a caller's
// transaction.
func (s *Store) place(ctx context.Context, h *ClaimHint) {
	if h == nil {
		return
	}
	h.mu.Lock()
	todo := h.spread && !h.placed // the claim loop's common case ends here, without reading the clock
	if todo {
		now := time.Now()
		todo = !now.Before(h.placeAt)
		if todo {
			h.placeAt = now.Add(placeRetry)
		}
	}
	h.mu.Unlock()
	if !todo {
		return
	}
	tenant, err := s.drawTenant(ctx)
	if err != nil || tenant == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.placed = true
	if h.from == "" {
		h.from, h.got = *tenant, 0
	}
}

// drawTenant runs spreadSQL in a transaction of its own, rolled back.
func (s *Store) drawTenant(ctx context.Context) (*string, error) {
	tx, err := s.db.Begin(ctx)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // read only
	var tenant *string
	err = tx.QueryRow(ctx, spreadSQL).Scan(&tenant)
	return tenant, err
}

// lastServedSQL is the last of the tenants $2 in rotation order from $1:
// the greatest before $1 once the ring wrapped, else the greatest from $1
// on.
const lastServedSQL = `/* claims.lastServed */
SELECT coalesce(max(t) FILTER (WHERE t < $1::text), max(t)) FROM unnest($2::text[]) t`

// lastServed is the last tenant in rotation order that a claim starting
// at from served with tasks ("" for none). order caches how the database
// orders text: the claiming loop's (ClaimHint.order), which outlives the
// Store a worker makes for each claim on its pinned connection.
func (s *Store) lastServed(ctx context.Context, from string, tasks []*agentledger.Task, order *atomic.Int32) string {
	tenants := make([]string, 0, 1)
	for _, t := range tasks {
		if len(tenants) == 0 || tenants[len(tenants)-1] != t.Tenant {
			tenants = append(tenants, t.Tenant)
		}
	}
	if len(tenants) < 2 || s.bytewise(ctx, order) {
		return lastServedBytewise(from, tenants)
	}
	var last string
	if err := s.db.QueryRow(ctx, lastServedSQL, from, tenants).Scan(&last); err != nil {
		// The claim stands; only the next one's start is less exact.
		return lastServedBytewise(from, tenants)
	}
	return last
}

// bytewise reports whether the database orders text bytewise, asked once
// per cache (a database that cannot say counts as collated).
func (s *Store) bytewise(ctx context.Context, order *atomic.Int32) bool {
	switch order.Load() {
	case orderBytewise:
		return true
	case orderCollated:
		return false
	}
	var yes bool
	if err := s.db.QueryRow(ctx, collationSQL).Scan(&yes); err != nil {
		return false // asked again next time
	}
	if yes {
		order.Store(orderBytewise)
	} else {
		order.Store(orderCollated)
	}
	return yes
}

// lastServedBytewise is lastServedSQL for text ordered by its bytes.
func lastServedBytewise(from string, tenants []string) string {
	var after, wrapped string
	for _, t := range tenants {
		if t >= from {
			after = max(after, t)
		} else {
			wrapped = max(wrapped, t)
		}
	}
	if wrapped != "" {
		return wrapped
	}
	return after
}
