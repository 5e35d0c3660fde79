package operator

import (
	"context"
	"flag"
	"testing"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/internal/test/goldensql"
)

var updateGolden = flag.Bool("update", false, "rewrite operator/testdata/sql from the statements the service sends")

// TestGoldenSQL keeps operator/testdata/sql/<name>.sql equal to the
// operator's statements on a task as the service sends them, each after
// the claim protocol's row lock (package goldensql).
func TestGoldenSQL(t *testing.T) {
	stmts := []goldensql.Statement{
		{Name: "claims.lockTask", Ident: "claims.LockTaskSQL", SQL: claims.LockTaskSQL},
		{Name: "operator.cancel", Ident: "cancelSQL", SQL: cancelSQL},
		{Name: "operator.requeue", Ident: "requeueSQL", SQL: requeueSQL},
		{Name: "operator.compensate", Ident: "compensateSQL", SQL: compensateSQL},
	}
	call := func(method, variant string, act func(context.Context, *Service) error, want ...string) goldensql.Call {
		return goldensql.Call{Method: method, Variant: variant, Want: want,
			Run: func(ctx context.Context, r *goldensql.Recorder) error { return act(ctx, New(r)) }}
	}
	calls := []goldensql.Call{
		call("Service.Cancel", "", func(ctx context.Context, s *Service) error {
			_, err := s.Cancel(ctx, "", 1)
			return err
		}, "claims.lockTask", "operator.cancel"),
		call("Service.Retry", "", func(ctx context.Context, s *Service) error { // Retry reads the task and its journal first
			_, err := s.requeue(ctx, "", 1, replay, []agentledger.TaskState{agentledger.StateDead})
			return err
		}, "claims.lockTask", "operator.requeue"),
		call("Service.RerunAnyway", "", func(ctx context.Context, s *Service) error { // Rerun reads the task and its journal first
			_, err := s.RerunAnyway(ctx, "", 1)
			return err
		}, "claims.lockTask", "operator.requeue"),
		call("Service.CompensateBy", "", func(ctx context.Context, s *Service) error { // Compensate names no one
			_, err := s.CompensateBy(ctx, "", 1, Actor("alice"))
			return err
		}, "claims.lockTask", "operator.compensate"),
	}
	goldensql.Check(t, "operator", *updateGolden, stmts, calls)
}
