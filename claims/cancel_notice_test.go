package claims_test

import (
	"testing"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/claims"
)

// A cancel notice names a lease; anything else names none.
func TestCancelNotice(t *testing.T) {
	if l, ok := claims.CancelNotice("42:1796629739190945"); !ok || l != (agentledger.Lease{TaskID: 42, Token: 1796629739190945}) {
		t.Errorf("a lease: %v %v", l, ok)
	}
	for _, bad := range []string{"", "42", "42:", ":7", "x:7", "42:7:9", "42:y"} {
		if _, ok := claims.CancelNotice(bad); ok {
			t.Errorf("%q read as a lease", bad)
		}
	}
}
