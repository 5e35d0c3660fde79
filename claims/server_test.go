package claims_test

import (
	"context"
	"testing"

	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/internal/test/testdb"
)

// The server the suite runs on has what the claims use, and the check
// finds it under the name and signature the claim statements call.
func TestTheServerHasWhatTheClaimsUse(t *testing.T) {
	t.Parallel()
	if err := claims.CheckServer(context.Background(), testdb.New(t)); err != nil {
		t.Fatal(err)
	}
}
