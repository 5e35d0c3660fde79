package claims

import (
	"context"
	"encoding/json"
	"flag"
	"testing"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/internal/test/goldensql"
)

var updateGolden = flag.Bool("update", false, "rewrite claims/testdata/sql from the statements the store sends")

// goldenStatements are the statements of the claim protocol whose text the
// golden files hold, by the name of their leading comment, with the Go
// value each is assembled as.
var goldenStatements = []struct{ name, ident, sql string }{
	{"claims.enqueue", "enqueueSQL", enqueueSQL},
	{"claims.enqueueMany", "enqueueManySQL", enqueueManySQL},
	{"claims.enqueueStart", "enqueueStartSQL", enqueueStartSQL},
	{"claims.lookupKeys", "lookupKeysSQL", lookupKeysSQL},
	{"claims.claim", "claimSQL", claimSQL},
	{"claims.claimDue", "claimDueSQL", claimDueSQL},
	{"claims.claimAlone", "claimAloneSQL", claimAloneSQL},
	{"claims.claimRun", "claimRunSQL", claimRunSQL},
	{"claims.heartbeat", "heartbeatSQL", heartbeatSQL},
	{"claims.current", "currentSQL", currentSQL},
	{"claims.succeed", "succeedSQL", succeedSQL},
	{"claims.fail", "failSQL", failSQL},
	{"claims.release", "releaseSQL", releaseSQL},
	{"claims.defer", "deferSQL", deferSQL},
	{"claims.stop", "stopSQL", stopSQL},
}

// goldenCalls drive a Store through every statement it can send to
// submit, claim, renew and finish a task; want are
// the names of the statements each call sends, in order (the recorder
// answers with no rows, so a call takes its path for "nothing found").
var goldenCalls = []struct {
	method, variant string
	call            func(context.Context, *Store) error
	want            []string
}{
	{"Store.Enqueue", "with a submission key", func(ctx context.Context, s *Store) error {
		_, err := s.Enqueue(ctx, EnqueueParams{Kind: "noop", SubmissionKey: "k"})
		return err
	}, []string{"claims.enqueue", "claims.lookupKeys"}},
	{"Store.EnqueueStart", "with a slot free and a submission key", func(ctx context.Context, s *Store) error {
		_, err := s.EnqueueStart(ctx, EnqueueParams{Kind: "noop", SubmissionKey: "k"}, goldenStarter{})
		return err
	}, []string{"claims.enqueueStart", "claims.lookupKeys"}},
	{"Store.EnqueueBatch", "two keyed tasks, in a transaction", func(ctx context.Context, s *Store) error {
		_, err := s.EnqueueBatch(ctx, []EnqueueParams{{Kind: "noop", SubmissionKey: "a"}, {Kind: "noop", SubmissionKey: "b"}})
		return err
	}, []string{"claims.enqueue", "claims.lookupKeys"}},
	{"Store.EnqueueBatch", "two tenants' tasks", func(ctx context.Context, s *Store) error {
		_, err := s.EnqueueBatch(ctx, []EnqueueParams{{Kind: "noop", Tenant: "a"}, {Kind: "noop", Tenant: "b"}})
		return err
	}, []string{"claims.enqueueMany"}},
	{"Store.Claim", "full", func(ctx context.Context, s *Store) error {
		_, err := s.Claim(ctx, goldenClaim(false, nil))
		return err
	}, []string{"claims.claim"}},
	{"Store.Claim", "due only", func(ctx context.Context, s *Store) error {
		_, err := s.Claim(ctx, goldenClaim(true, &ClaimHint{}))
		return err
	}, []string{"claims.claimDue"}},
	{"Store.Claim", "due only, hinted alone: the lean try, then the full due-only claim", func(ctx context.Context, s *Store) error {
		_, err := s.Claim(ctx, goldenClaim(true, &ClaimHint{n: 1}))
		return err
	}, []string{"claims.claimAlone", "claims.claimDue"}},
	{"Store.Claim", "due only, hinted crowded: the run try, then the full due-only claim", func(ctx context.Context, s *Store) error {
		_, err := s.Claim(ctx, goldenClaim(true, &ClaimHint{run: 1}))
		return err
	}, []string{"claims.claimRun", "claims.claimDue"}},
	{"Store.Heartbeat", "nothing renewed: then which still hold", func(ctx context.Context, s *Store) error {
		_, err := s.Heartbeat(ctx, goldenLeases, time.Minute)
		return err
	}, []string{"claims.heartbeat", "claims.current"}},
	{"Store.SucceedMany", "", func(ctx context.Context, s *Store) error {
		_, err := s.SucceedMany(ctx, []Success{{Lease: goldenLeases[0], Result: json.RawMessage(`{}`)}, {Lease: goldenLeases[1]}})
		return err
	}, []string{"claims.succeed"}},
	{"Store.FailMany", "", func(ctx context.Context, s *Store) error {
		_, _, err := s.FailMany(ctx, []Failure{{Lease: goldenLeases[0], Error: "boom", Delay: time.Second}, {Lease: goldenLeases[1], Final: true}})
		return err
	}, []string{"claims.fail"}},
	{"Store.ReleaseMany", "", func(ctx context.Context, s *Store) error {
		_, err := s.ReleaseMany(ctx, goldenLeases)
		return err
	}, []string{"claims.release"}},
	{"Store.DeferMany", "", func(ctx context.Context, s *Store) error {
		_, err := s.DeferMany(ctx, []Deferral{{Lease: goldenLeases[0], Until: time.Unix(1e9, 0), Reason: "limit"}})
		return err
	}, []string{"claims.defer"}},
	{"Store.Cancelled", "", func(ctx context.Context, s *Store) error {
		return s.Cancelled(ctx, goldenLeases[0], "cancelled by operator")
	}, []string{"claims.stop"}},
	{"Store.NeedsAttention", "", func(ctx context.Context, s *Store) error {
		return s.NeedsAttention(ctx, goldenLeases[0], "unknown outcome")
	}, []string{"claims.stop"}},
}

var goldenLeases = []agentledger.Lease{{TaskID: 1, Token: 7}, {TaskID: 2, Token: 8}}

func goldenClaim(dueOnly bool, hint *ClaimHint) ClaimParams {
	return ClaimParams{Queue: "default", Worker: "w", Limit: 10, Lease: time.Minute,
		Kinds: []string{"noop"}, DueOnly: dueOnly, Hint: hint}
}

// TestGoldenSQL keeps claims/testdata/sql/<name>.sql equal to the
// statements of the claim protocol as the store sends them (package
// goldensql).
func TestGoldenSQL(t *testing.T) {
	calls := make([]goldensql.Call, len(goldenCalls))
	for i, c := range goldenCalls {
		calls[i] = goldensql.Call{Method: c.method, Variant: c.variant, Want: c.want,
			Run: func(ctx context.Context, r *goldensql.Recorder) error { return c.call(ctx, New(r)) }}
	}
	stmts := make([]goldensql.Statement, len(goldenStatements))
	for i, st := range goldenStatements {
		stmts[i] = goldensql.Statement{Name: st.name, Ident: st.ident, SQL: st.sql}
	}
	goldensql.Check(t, "claims", *updateGolden, stmts, calls)
}

// goldenStarter always has a slot.
type goldenStarter struct{}

func (goldenStarter) Reserve(string, string, []string) (Slot, bool) { return goldenStarter{}, true }
func (goldenStarter) Lease() (string, time.Duration)                { return "w", time.Minute }
func (goldenStarter) Takes() (kinds, caps []string)                 { return []string{"noop"}, nil }
func (goldenStarter) Start(*agentledger.Task, time.Time)            {}
func (goldenStarter) Release()                                      {}
func (goldenStarter) Queued(string)                                 {}
