package operator

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/tenants"
)

// Share is a tenant's part of the claim as an operator reads it: its
// weight and cap, stored or the defaults (weight 1, no cap), and how many
// of its tasks run now across the fleet.
type Share struct {
	Tenant     string `json:"tenant"`
	Weight     int    `json:"weight"`
	MaxRunning *int   `json:"max_running"`
	Running    int64  `json:"running"`
	// Source and UpdatedAt say where and when the share was stored; nil
	// for a tenant without a stored share.
	Source    *string    `json:"source"`
	UpdatedAt *time.Time `json:"updated_at"`
}

// AtCap reports whether the tenant runs as many tasks as its cap allows,
// or more (a cap lowered below what runs): no claim leases it another.
func (s Share) AtCap() bool { return s.MaxRunning != nil && s.Running >= int64(*s.MaxRunning) }

// Shares lists by name the operator's tenant, every tenant, and any other
// tenant with a stored share or running tasks. Its three reads are not one
// snapshot: a task may start or end between them.
func (s *Service) Shares(ctx context.Context) ([]Share, error) {
	st := tenants.NewStore(s.db)
	stored, err := st.Shares(ctx)
	if err != nil {
		return nil, err
	}
	ts, err := st.ListTenants(ctx)
	if err != nil {
		return nil, err
	}
	running, err := s.tasks.RunningByTenant(ctx)
	if err != nil {
		return nil, err
	}
	byName := map[string]*Share{}
	add := func(name string) *Share {
		if r, ok := byName[name]; ok {
			return r
		}
		r := &Share{Tenant: name, Weight: tenants.DefaultWeight}
		byName[name] = r
		return r
	}
	add(agentledger.OperatorTenant)
	for _, t := range ts {
		add(t.Name)
	}
	for _, sh := range stored {
		r := add(sh.Tenant)
		r.Weight, r.MaxRunning, r.Source, r.UpdatedAt = sh.Weight, sh.MaxRunning, &sh.Source, &sh.UpdatedAt
	}
	for name, n := range running {
		add(name).Running = n
	}
	out := make([]Share, 0, len(byName))
	for _, r := range byName {
		out = append(out, *r)
	}
	slices.SortFunc(out, func(x, y Share) int { return strings.Compare(x.Tenant, y.Tenant) })
	return out, nil
}
