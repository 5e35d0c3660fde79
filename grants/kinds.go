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

// NoKinds is how a stored grant says "no kind": kinds = ["!none"]. A kind
// name is letters, digits, '.', '_', ':' and '-' (claims refuses any other
// at submit), so no task is ever of this kind. An agentledger that predates
// all_kinds reads an empty kinds list as every kind, and this list as one
// kind that matches nothing: a grant of no kind stays one of no kind for
// it, in a rolling upgrade or after migration 00029's Down. Grant's JSON
// methods write it and read it back as the empty list; it is never shown.
const NoKinds = "!none"

// plainGrant is a Grant without its JSON methods.
type plainGrant Grant

// MarshalJSON writes the document stored in tenant_grants, which every
// agentledger version reads as the same kinds: every kind is all_kinds
// with kinds [] (what older versions read as every kind too), no kind is
// [NoKinds], never []. Kinds is always written, so that a document without
// it is one written before all_kinds existed.
func (g Grant) MarshalJSON() ([]byte, error) {
	switch {
	case g.All || g.AllKinds:
		g.Kinds = []string{}
	case len(g.Kinds) == 0:
		g.Kinds = []string{NoKinds}
	}
	return json.Marshal(plainGrant(g))
}

// UnmarshalJSON reads a stored grant. A document without a kinds key was
// written by an agentledger that had no all_kinds (before migration 00029,
// or an older agentctl or agentd after it), when no kinds meant every kind:
// it still does. Migration 00029 writes all_kinds into the documents stored
// before it. NoKinds is dropped from the list (an older agentctl adding a
// kind keeps it beside the kind).
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
	if err := json.Unmarshal(p.Kinds, &g.Kinds); err != nil {
		return err
	}
	g.Kinds = slices.DeleteFunc(g.Kinds, func(k string) bool { return k == NoKinds })
	if len(g.Kinds) == 0 {
		g.Kinds = nil
	}
	return nil
}
