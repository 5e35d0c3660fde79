package main

import (
	"fmt"
	"slices"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/tenants"
)

// shareKey holds the tenants' shares of the claim: an array of tables.
const shareKey = "tenant_share"

// fileShare is one [[tenant_share]] table.
type fileShare struct {
	Tenant     string `toml:"tenant"`
	Weight     *int   `toml:"weight"`
	MaxRunning *int   `toml:"max_running"`
}

// sharesFromFile reads and checks the [[tenant_share]] tables.
func sharesFromFile(path string) ([]tenants.Share, error) {
	var f fileTables
	if _, err := decodeFile(path, &f); err != nil {
		return nil, err
	}
	out := make([]tenants.Share, 0, len(f.Shares))
	for i, fs := range f.Shares {
		s := tenants.Share{Tenant: fs.Tenant, Weight: tenants.DefaultWeight, MaxRunning: fs.MaxRunning,
			Source: tenants.SourceConfig}
		if fs.Weight != nil {
			s.Weight = *fs.Weight
		}
		err := s.Check()
		if err == nil && slices.ContainsFunc(out, func(o tenants.Share) bool { return o.Tenant == s.Tenant }) {
			err = agentledger.Invalid("tenant", "%s has another [[tenant_share]] table", s.Tenant)
		}
		if err != nil {
			return nil, fmt.Errorf("config file %s: tenant_share[%d] (tenant %q): %w", path, i, fs.Tenant, err)
		}
		out = append(out, s)
	}
	return out, nil
}
