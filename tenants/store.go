package tenants

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentledger/agentledger"
)

// DB is what the store needs from a connection; *pgxpool.Pool, *pgx.Conn
// and pgx.Tx have it.
type DB interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// Tenant is one customer of the API: its tasks are invisible to the others.
type Tenant struct {
	Name      string    `json:"name"`
	CreatedAt time.Time `json:"created_at"`
	// DisabledAt is set while the tenant is disabled: its tokens are
	// refused.
	DisabledAt *time.Time `json:"disabled_at"`
}

// Store manages tenants and their API tokens.
type Store struct{ db DB }

// NewStore returns the tenants of db.
func NewStore(db DB) *Store { return &Store{db: db} }

// tenantName is the tenants table's check: a name usable as a task tenant.
var tenantName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$`)

// CheckName returns an agentledger.ErrInvalid error unless name can name a
// tenant: 1-128 letters, digits, '_', '.' and '-', starting with a letter or
// digit.
func CheckName(name string) error {
	if !tenantName.MatchString(name) {
		return agentledger.Invalid("name", "%q must be 1-128 characters of letters, digits, '_', '.' and '-', starting with a letter or digit", name)
	}
	return nil
}

// reservedPrefix names the project's own namespace: no tenant starts with it.
const reservedPrefix = "agentledger"

// CheckNewName is CheckName, and refuses the reserved names: agentledger.OperatorTenant,
// whose tokens would read, cancel and replay every operator task, and the
// agentledger namespace.
func CheckNewName(name string) error {
	if err := CheckName(name); err != nil {
		return err
	}
	if strings.EqualFold(name, agentledger.OperatorTenant) || strings.HasPrefix(strings.ToLower(name), reservedPrefix) {
		return agentledger.Invalid("name", "%q is reserved: %q is the tenant of agentctl, cron and webhook tasks, and names starting with %q are the project's", name, agentledger.OperatorTenant, reservedPrefix)
	}
	return nil
}

// SetDisabled disables tenant name (its tokens are refused from the next
// request on) or enables it again. Errors: agentledger.ErrNotFound for an
// unknown tenant.
func (s *Store) SetDisabled(ctx context.Context, name string, disabled bool) (Tenant, error) {
	rows, err := s.db.Query(ctx, setDisabledSQL, name, disabled)
	if err != nil {
		return Tenant{}, fmt.Errorf("tenant %q: %w", name, err)
	}
	t, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByPos[Tenant])
	if errors.Is(err, pgx.ErrNoRows) {
		return Tenant{}, agentledger.Errorf(agentledger.CodeNotFound, "tenant %q does not exist", name)
	}
	if err != nil {
		return Tenant{}, fmt.Errorf("tenant %q: %w", name, err)
	}
	return t, nil
}

// CreateTenant adds tenant name. Errors: agentledger.ErrInvalid for a bad
// or reserved name, agentledger.ErrConflict when it exists.
func (s *Store) CreateTenant(ctx context.Context, name string) (Tenant, error) {
	if err := CheckNewName(name); err != nil {
		return Tenant{}, err
	}
	rows, err := s.db.Query(ctx, insertTenantSQL, name)
	if err != nil {
		return Tenant{}, fmt.Errorf("tenant %q: %w", name, err)
	}
	t, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByPos[Tenant])
	if errors.Is(err, pgx.ErrNoRows) {
		return Tenant{}, agentledger.Errorf(agentledger.CodeConflict, "tenant %q exists", name)
	}
	if err != nil {
		return Tenant{}, fmt.Errorf("tenant %q: %w", name, err)
	}
	return t, nil
}

// Exists reports whether tenant name exists: agentledger.OperatorTenant
// always does, for agentctl, cron and webhooks.
func (s *Store) Exists(ctx context.Context, name string) (bool, error) {
	if name == agentledger.OperatorTenant {
		return true, nil
	}
	var exists bool
	if err := s.db.QueryRow(ctx, tenantExistsSQL, name).Scan(&exists); err != nil {
		return false, fmt.Errorf("tenant %q: %w", name, err)
	}
	return exists, nil
}

// Tenant returns tenant name; ok is false when there is no such row (the
// operator's tenant has none).
func (s *Store) Tenant(ctx context.Context, name string) (t Tenant, ok bool, err error) {
	rows, err := s.db.Query(ctx, getTenantSQL, name)
	if err != nil {
		return Tenant{}, false, fmt.Errorf("tenant %q: %w", name, err)
	}
	t, err = pgx.CollectExactlyOneRow(rows, pgx.RowToStructByPos[Tenant])
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return Tenant{}, false, nil
	case err != nil:
		return Tenant{}, false, fmt.Errorf("tenant %q: %w", name, err)
	}
	return t, true, nil
}

// ListTenants returns every tenant by name.
func (s *Store) ListTenants(ctx context.Context) ([]Tenant, error) {
	rows, err := s.db.Query(ctx, listTenantsSQL)
	if err != nil {
		return nil, fmt.Errorf("tenants: %w", err)
	}
	ts, err := pgx.CollectRows(rows, pgx.RowToStructByPos[Tenant])
	if err != nil {
		return nil, fmt.Errorf("tenants: %w", err)
	}
	return ts, nil
}
