package grants

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

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

// Default is the grant of a tenant without a row.
func Default(tenant string) *Grant {
	return &Grant{All: tenant == agentledger.OperatorTenant}
}

// Get returns tenant's stored grant and whether there is one.
func (s *Store) Get(ctx context.Context, tenant string) (*Grant, bool, error) {
	var doc []byte
	err := s.db.QueryRow(ctx, getSQL, tenant).Scan(&doc)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("grant of tenant %q: %w", tenant, err)
	}
	var g Grant
	if err := json.Unmarshal(doc, &g); err != nil {
		return nil, false, fmt.Errorf("grant of tenant %q is unreadable: %w", tenant, err)
	}
	return &g, true, nil
}

// Put stores g as tenant's grant, replacing any.
func (s *Store) Put(ctx context.Context, tenant string, g *Grant) error {
	if err := g.Validate(); err != nil {
		return err
	}
	doc, err := json.Marshal(g)
	if err != nil {
		return err
	}
	if _, err := s.db.Exec(ctx, putSQL, tenant, doc); err != nil {
		return fmt.Errorf("grant of tenant %q: %w", tenant, err)
	}
	return nil
}

// Update changes tenant's grant (starting from the one in force) with
// change and stores it, under a lock on the tenant's grant so that two
// concurrent updates both count; it returns the grant stored.
func (s *Store) Update(ctx context.Context, tenant string, change func(*Grant)) (*Grant, error) {
	var g *Grant
	err := pgx.BeginFunc(ctx, s.db, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, lockSQL, tenant); err != nil {
			return err
		}
		var err error
		if g, err = NewStore(tx).For(ctx, tenant); err != nil {
			return err
		}
		change(g)
		return NewStore(tx).Put(ctx, tenant, g)
	})
	if err != nil {
		return nil, err
	}
	return g, nil
}

const getSQL = `/* grants.get */ SELECT grant_doc FROM tenant_grants WHERE tenant = $1`

// putSQL stores a grant and notifies Channel in the same statement.
const putSQL = `/* grants.put */
WITH put AS (
	INSERT INTO tenant_grants (tenant, grant_doc) VALUES ($1, $2)
	ON CONFLICT (tenant) DO UPDATE SET grant_doc = EXCLUDED.grant_doc, updated_at = now()
	RETURNING tenant)
SELECT pg_notify('` + Channel + `', tenant) FROM put`

const lockSQL = `/* grants.lock */ SELECT pg_advisory_xact_lock(hashtext('agentledger.grant:' || $1))`
