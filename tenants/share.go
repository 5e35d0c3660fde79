package tenants

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentledger/agentledger"
)

// Share is a tenant's part of the claim (the tenant_shares table, read by
// package claims): when several tenants have due tasks in a queue, each
// claim round gives each of them Weight shares of its batch, and the
// tenant never has more than MaxRunning tasks running (leased) across the
// fleet. A tenant without a stored share has weight 1 and no cap.
type Share struct {
	Tenant string `json:"tenant"`
	Weight int    `json:"weight"`
	// MaxRunning caps the tenant's running tasks; nil: no cap.
	MaxRunning *int      `json:"max_running"`
	Source     string    `json:"source"` // SourceOperator or SourceConfig
	UpdatedAt  time.Time `json:"updated_at"`
}

// Where a share was set.
const (
	SourceOperator = "operator" // agentctl tenant share set
	SourceConfig   = "config"   // agentd's config file, stored when it starts
)

// MaxWeight is the largest weight: a tenant of weight 10,000 next to one of
// weight 1 gets all but one task of a batch of 10,000.
const MaxWeight = 10_000

// MaxCap is the largest cap on a tenant's running tasks (the column's
// integer).
const MaxCap = math.MaxInt32

// DefaultWeight is the weight of a tenant without a share.
const DefaultWeight = 1

// Check returns an agentledger.ErrInvalid error naming the field at fault
// (tenant, weight or max_running).
func (s Share) Check() error {
	var ie *agentledger.InvalidError
	if err := CheckName(s.Tenant); errors.As(err, &ie) {
		return agentledger.Invalid("tenant", "%s", ie.Problem)
	}
	if s.Weight < 1 || s.Weight > MaxWeight {
		return agentledger.Invalid("weight", "%d must be between 1 and %d", s.Weight, MaxWeight)
	}
	if s.MaxRunning != nil && *s.MaxRunning < 1 {
		return agentledger.Invalid("max_running", "%d must be at least 1 (leave it out for no cap)", *s.MaxRunning)
	}
	if s.MaxRunning != nil && *s.MaxRunning > MaxCap {
		return agentledger.Invalid("max_running", "%d must be at most %d (leave it out for no cap)", *s.MaxRunning, MaxCap)
	}
	if s.Source != SourceOperator && s.Source != SourceConfig {
		return agentledger.Invalid("source", "%q is neither %q nor %q", s.Source, SourceOperator, SourceConfig)
	}
	return nil
}

// PutShare stores s, replacing the tenant's share. Claims obey it from
// their next round on, in every daemon. Errors: agentledger.ErrInvalid
// (Check), agentledger.ErrNotFound for an operator's share of a tenant that
// does not exist (agentledger.OperatorTenant always does); a configured
// share is stored for a tenant to come. A configured share never replaces
// an operator's: PutShare then returns the operator's, which stands until
// the operator removes it (DeleteShare).
func (st *Store) PutShare(ctx context.Context, s Share) (Share, error) {
	if err := s.Check(); err != nil {
		return Share{}, err
	}
	rows, err := st.db.Query(ctx, putShareSQL, s.Tenant, s.Weight, s.MaxRunning, s.Source,
		agentledger.OperatorTenant, s.Source == SourceConfig)
	if err != nil {
		return Share{}, fmt.Errorf("share of tenant %q: %w", s.Tenant, err)
	}
	got, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByPos[Share])
	if errors.Is(err, pgx.ErrNoRows) && s.Source == SourceConfig {
		return st.share(ctx, s.Tenant) // the operator's, kept
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return Share{}, agentledger.Errorf(agentledger.CodeNotFound, "tenant %q does not exist", s.Tenant)
	}
	if err != nil {
		return Share{}, fmt.Errorf("share of tenant %q: %w", s.Tenant, err)
	}
	return got, nil
}

// NewCap reports whether got, stored where was stood (had false: no share
// was stored), caps a tenant that had no cap: the tasks it already runs
// must then be settled (claims.Store.SettleCaps).
func NewCap(was Share, had bool, got Share) bool {
	return got.MaxRunning != nil && (!had || was.MaxRunning == nil)
}

// ShareOf reads tenant's stored share; ok is false when none is stored
// (weight 1, no cap).
func (st *Store) ShareOf(ctx context.Context, tenant string) (s Share, ok bool, err error) {
	rows, err := st.db.Query(ctx, getShareSQL, tenant)
	if err != nil {
		return Share{}, false, fmt.Errorf("share of tenant %q: %w", tenant, err)
	}
	got, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByPos[Share])
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return Share{}, false, nil
	case err != nil:
		return Share{}, false, fmt.Errorf("share of tenant %q: %w", tenant, err)
	}
	return got, true, nil
}

// share reads tenant's stored share, which must be there.
func (st *Store) share(ctx context.Context, tenant string) (Share, error) {
	got, ok, err := st.ShareOf(ctx, tenant)
	if err == nil && !ok { // removed since the write found it
		err = fmt.Errorf("share of tenant %q: %w", tenant, pgx.ErrNoRows)
	}
	return got, err
}

// DeleteShare removes tenant's share: it has weight 1 and no cap again.
// Errors: agentledger.ErrNotFound when none is stored.
func (st *Store) DeleteShare(ctx context.Context, tenant string) (Share, error) {
	rows, err := st.db.Query(ctx, deleteShareSQL, tenant)
	if err != nil {
		return Share{}, fmt.Errorf("share of tenant %q: %w", tenant, err)
	}
	got, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByPos[Share])
	if errors.Is(err, pgx.ErrNoRows) {
		return Share{}, agentledger.Errorf(agentledger.CodeNotFound, "tenant %q has no share stored", tenant)
	}
	if err != nil {
		return Share{}, fmt.Errorf("share of tenant %q: %w", tenant, err)
	}
	return got, nil
}

// Shares returns the stored shares by tenant.
func (st *Store) Shares(ctx context.Context) ([]Share, error) {
	rows, err := st.db.Query(ctx, listSharesSQL)
	if err != nil {
		return nil, fmt.Errorf("shares: %w", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[Share])
	if err != nil {
		return nil, fmt.Errorf("shares: %w", err)
	}
	return out, nil
}
