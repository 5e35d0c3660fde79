package grants

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/agentledger/agentledger"
)

// DB is what the store needs from a connection; *pgxpool.Pool, *pgx.Conn
// and pgx.Tx have it.
type DB interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Begin(ctx context.Context) (pgx.Tx, error)
}

// Source gives the grant in force for a tenant.
type Source interface {
	For(ctx context.Context, tenant string) (*Grant, error)
}

// Store keeps the grants in table tenant_grants.
type Store struct{ db DB }

// NewStore returns the grants of db.
func NewStore(db DB) *Store { return &Store{db: db} }

// For returns tenant's grant: its row, else the default — everything for
// agentledger.OperatorTenant, every kind and nothing else for any other tenant. It reads the
// table each time, so a revoked grant holds from the next attempt on.
func (s *Store) For(ctx context.Context, tenant string) (*Grant, error) {
	g, stored, err := s.Get(ctx, tenant)
	if err != nil || stored {
		return g, err
	}
	return Default(tenant), nil
}

// Default is the grant of a tenant without a row: every kind, and for
// agentledger.OperatorTenant everything.
func Default(tenant string) *Grant {
	return &Grant{All: tenant == agentledger.OperatorTenant, AllKinds: true}
}

// Who set a stored grant last (Record.SetBy).
const (
	SetByOperator = "operator" // agentctl tenant grant/revoke, or Put
	SetByConfig   = "config"   // agentd's [grant.<tenant>] table, stored when it started
	// SetByUnknown is a grant stored before migration 00029 recorded who
	// set it (or inserted by an older agentctl or agentd since): it may be
	// an operator's emergency revoke, so a configuration that differs
	// leaves it in force (see Seed).
	SetByUnknown = ""
)

// Record is a stored grant and who set it when.
type Record struct {
	Grant     *Grant
	SetBy     string // SetByOperator, SetByConfig or SetByUnknown
	UpdatedAt time.Time
}

// Get returns tenant's stored grant and whether there is one.
func (s *Store) Get(ctx context.Context, tenant string) (*Grant, bool, error) {
	r, err := s.Record(ctx, tenant)
	if err != nil || r == nil {
		return nil, false, err
	}
	return r.Grant, true, nil
}

// Record returns tenant's stored grant with who set it, nil when none is
// stored.
func (s *Store) Record(ctx context.Context, tenant string) (*Record, error) {
	var (
		doc   []byte
		setBy *string
		r     Record
	)
	err := s.db.QueryRow(ctx, getSQL, tenant).Scan(&doc, &setBy, &r.UpdatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("grant of tenant %q: %w", tenant, err)
	}
	r.Grant = new(Grant)
	if err := json.Unmarshal(doc, r.Grant); err != nil {
		return nil, fmt.Errorf("grant of tenant %q is unreadable: %w", tenant, err)
	}
	if setBy != nil {
		r.SetBy = *setBy
	}
	return &r, nil
}

// Put stores g as tenant's grant, set by the operator, replacing any: a
// daemon's configuration never replaces it (see Seed).
func (s *Store) Put(ctx context.Context, tenant string, g *Grant) error {
	return s.put(ctx, tenant, g, SetByOperator)
}

func (s *Store) put(ctx context.Context, tenant string, g *Grant, setBy string) error {
	if err := g.Validate(); err != nil {
		return err
	}
	doc, err := json.Marshal(g)
	if err != nil {
		return err
	}
	if _, err := s.db.Exec(ctx, putSQL, tenant, doc, setBy); err != nil {
		return fmt.Errorf("grant of tenant %q: %w", tenant, err)
	}
	return nil
}

// Seeded is what Seed did.
type Seeded struct {
	// Stored is true when the configuration's grant was stored.
	Stored bool
	// Kept is the grant left in force instead, set by the operator or by
	// no one known (SetByUnknown), when it differs from the
	// configuration's; nil otherwise.
	Kept *Record
	// Replaced is the configuration's grant (of another daemon's file, or
	// of this file before it changed) that the new one replaced, when it
	// differs; nil otherwise.
	Replaced *Record
}

// Seed stores g, a daemon configuration's grant, as tenant's grant unless
// the grant stored was last set by the operator: a configuration seeds a
// grant and may change what it seeded (editing the file takes effect at
// the next start), but an operator's change stands until the operator
// hands the grant back (HandToConfig, Delete). A grant of unknown origin,
// stored before 00029, is the operator's when it differs from g (it may be
// a revoke made before the upgrade) and becomes the configuration's when
// it is the same. It reports what it did.
func (s *Store) Seed(ctx context.Context, tenant string, g *Grant) (Seeded, error) {
	if err := g.Validate(); err != nil {
		return Seeded{}, err
	}
	var out Seeded
	err := pgx.BeginFunc(ctx, s.db, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, lockSQL, tenant); err != nil {
			return err
		}
		r, err := NewStore(tx).Record(ctx, tenant)
		if err != nil {
			return err
		}
		differs := r != nil && len(Diff(g, r.Grant)) > 0
		switch {
		case r != nil && r.SetBy == SetByOperator:
			if differs {
				out.Kept = r
			}
			return nil
		case r != nil && r.SetBy == SetByUnknown && differs:
			out.Kept = r
			return nil
		case r != nil && r.SetBy == SetByConfig && differs:
			out.Replaced = r
		}
		out.Stored = true
		return NewStore(tx).put(ctx, tenant, g, SetByConfig)
	})
	if err != nil {
		return Seeded{}, err
	}
	return out, nil
}

// HandToConfig marks tenant's stored grant as the configuration's without
// changing it: it stays in force until a daemon whose configuration grants
// the tenant starts and replaces it, and stays as it is if none does. It
// returns the grant, nil when none is stored.
func (s *Store) HandToConfig(ctx context.Context, tenant string) (*Record, error) {
	var r *Record
	err := pgx.BeginFunc(ctx, s.db, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, lockSQL, tenant); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, handSQL, tenant); err != nil {
			return fmt.Errorf("grant of tenant %q: %w", tenant, err)
		}
		var err error
		r, err = NewStore(tx).Record(ctx, tenant)
		return err
	})
	if err != nil {
		return nil, err
	}
	return r, nil
}

// Delete removes tenant's stored grant: the tenant has the default grant
// (every kind, no tool) until a daemon whose configuration grants it
// starts; HandToConfig hands it back without that. It reports whether a
// grant was stored.
func (s *Store) Delete(ctx context.Context, tenant string) (bool, error) {
	tag, err := s.db.Exec(ctx, deleteSQL, tenant)
	if err != nil {
		return false, fmt.Errorf("grant of tenant %q: %w", tenant, err)
	}
	return tag.RowsAffected() > 0, nil
}

// Update changes tenant's grant (starting from the one in force) with
// change and stores it as the operator's, under a lock on the tenant's
// grant so that two concurrent updates both count; it returns the grant
// stored.
func (s *Store) Update(ctx context.Context, tenant string, change func(*Grant)) (*Grant, error) {
	return s.Change(ctx, tenant, func(g *Grant) error { change(g); return nil })
}

// Change is Update with a change that may refuse: its error is returned
// and nothing is stored.
func (s *Store) Change(ctx context.Context, tenant string, change func(*Grant) error) (*Grant, error) {
	var g *Grant
	err := pgx.BeginFunc(ctx, s.db, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, lockSQL, tenant); err != nil {
			return err
		}
		var err error
		if g, err = NewStore(tx).For(ctx, tenant); err != nil {
			return err
		}
		if err := change(g); err != nil {
			return err
		}
		return NewStore(tx).Put(ctx, tenant, g)
	})
	if err != nil {
		return nil, err
	}
	return g, nil
}

const getSQL = `/* grants.get */ SELECT grant_doc, set_by, updated_at FROM tenant_grants WHERE tenant = $1`

// putSQL stores a grant, with who set it, and notifies Channel in the same
// statement.
const putSQL = `/* grants.put */
WITH put AS (
	INSERT INTO tenant_grants (tenant, grant_doc, set_by) VALUES ($1, $2, $3)
	ON CONFLICT (tenant) DO UPDATE SET grant_doc = EXCLUDED.grant_doc, set_by = EXCLUDED.set_by, updated_at = now()
	RETURNING tenant)
SELECT pg_notify('` + Channel + `', tenant) FROM put`

// deleteSQL removes a grant and notifies Channel: caches drop it too.
const deleteSQL = `/* grants.delete */
WITH gone AS (DELETE FROM tenant_grants WHERE tenant = $1 RETURNING tenant)
SELECT pg_notify('` + Channel + `', tenant) FROM gone`

// handSQL marks a grant as the configuration's, its grant unchanged (no
// notification: what is in force is the same).
const handSQL = `/* grants.hand_to_config */ UPDATE tenant_grants SET set_by = '` + SetByConfig + `', updated_at = now() WHERE tenant = $1`

const lockSQL = `/* grants.lock */ SELECT pg_advisory_xact_lock(hashtext('agentledger.grant:' || $1))`
