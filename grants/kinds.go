package grants

import (
	"encoding/json"
	"slices"

	"github.com/agentledger/agentledger"
)

// AllKindsWord in the config file's kinds list grants every kind:
// kinds = ["all"].
const AllKindsWord = "all"

// KindsFromConfig reads the kinds of a [grant.<tenant>] table into AllKinds
// and Kinds; written says whether the table has a kinds key. A table
// without one keeps the default grant's every kind (what it meant before
// all_kinds existed); kinds = ["all"] is every kind; kinds = [] is none.
func (g *Grant) KindsFromConfig(written bool) error {
	switch {
	case !written:
		g.AllKinds, g.Kinds = true, nil
	case slices.Contains(g.Kinds, AllKindsWord):
		if len(g.Kinds) > 1 {
			return agentledger.Invalid("kinds", "%q (every kind) stands alone: kinds = [%q]", AllKindsWord, AllKindsWord)
		}
		g.AllKinds, g.Kinds = true, nil
	default:
		g.AllKinds = false
	}
	return nil
}

// plainGrant is a Grant without its JSON methods.
type plainGrant Grant

// MarshalJSON writes kinds always, [] for none, so that a stored document
// without a kinds key is one written before all_kinds existed.
func (g Grant) MarshalJSON() ([]byte, error) {
	if g.Kinds == nil {
		g.Kinds = []string{}
	}
	return json.Marshal(plainGrant(g))
}

// UnmarshalJSON reads a stored grant. A document without a kinds key was
// written by an agentledger that had no all_kinds (before migration 00029,
// or an older agentctl or agentd after it), when no kinds meant every kind:
// it still does. Migration 00029 writes all_kinds into the documents stored
// before it.
func (g *Grant) UnmarshalJSON(b []byte) error {
	var p struct {
		plainGrant
		Kinds json.RawMessage `json:"kinds"`
	}
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*g = Grant(p.plainGrant)
	g.Kinds = nil
	if p.Kinds == nil {
		g.AllKinds = true
		return nil
	}
	return json.Unmarshal(p.Kinds, &g.Kinds)
}
