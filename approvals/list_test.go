package approvals_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/approvals"
	"github.com/agentledger/agentledger/internal/test/keyset"
	"github.com/agentledger/agentledger/internal/test/testdb"
)

// The pending requests read page by page after each page's last are the
// whole list in its order, each once, requests asked at the same moment
// included; a page of decided ones cannot follow a position.
func TestPendingRequestsPageAfterAPosition(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	s := approvals.NewStore(db)
	var ids []int64
	for range 7 {
		r, _ := request(t, s, db, time.Hour)
		ids = append(ids, r.ID)
	}
	// Three moments, shared by two or three requests each.
	if _, err := db.Exec(ctx, `UPDATE approvals a SET requested_at = timestamptz '2026-01-01' + (n % 3) * interval '1 minute'
		FROM (SELECT id, row_number() OVER (ORDER BY id) AS n FROM approvals WHERE id = ANY ($1)) o WHERE a.id = o.id`, ids); err != nil {
		t.Fatal(err)
	}
	whole, err := s.List(ctx, approvals.ListParams{})
	if err != nil || len(whole) != len(ids) {
		t.Fatalf("listed %d requests, %v; want %d", len(whole), err, len(ids))
	}
	paged := keyset.All(t, len(ids), func(after *approvals.Position) ([]approvals.Request, error) {
		return s.List(ctx, approvals.ListParams{Limit: 2, After: after})
	}, approvals.Request.Position)
	keyset.Same(t, "requests", paged, whole, func(r approvals.Request) int64 { return r.ID })
	last := paged[len(paged)-1].Position()
	_, err = s.List(ctx, approvals.ListParams{States: []string{approvals.Pending, approvals.Approved}, After: &last})
	var inv *agentledger.InvalidError
	if !errors.As(err, &inv) || inv.Field != "after" {
		t.Errorf("a page of decided requests after a position: %v; want an invalid after", err)
	}
}
