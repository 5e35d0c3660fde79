package steps_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/grants"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/operator"
	"github.com/agentledger/agentledger/saga"
	"github.com/agentledger/agentledger/steps"
	"github.com/agentledger/agentledger/tools"
)

// revokeOnce returns an after hook for the post tool that, on its first
// call, revokes tool from acme's grant as agentctl tenant revoke does.
func revokeOnce(t *testing.T, store *grants.Store, tool string) func(json.RawMessage) error {
	done := false
	return func(json.RawMessage) error {
		if done {
			return nil
		}
		done = true
		_, err := store.Update(context.Background(), "acme", func(g *grants.Grant) {
			g.Tools = slices.DeleteFunc(g.Tools, func(n string) bool { return n == tool })
		})
		if err != nil {
			t.Error(err)
		}
		return nil
	}
}

// A revoke reaches a task in flight: the grant is read again before each
// step, so a tool revoked while step 0 runs is refused at step 1, which
// performs and records nothing.
func TestRevokeStopsTheNextStep(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	store := grants.NewStore(e.DB)
	if err := store.Put(context.Background(), "acme", &grants.Grant{Tools: []string{"post"}}); err != nil {
		t.Fatal(err)
	}
	e.runner.Grants = store
	e.tool.after = revokeOnce(t, store, "post")
	e.Enqueue(claims.EnqueueParams{Tenant: "acme", Payload: json.RawMessage(`{"steps":[{"tool":"post","args":{"n":0}},{"tool":"post","args":{"n":1}}]}`)})
	task := e.claim()
	_, err := e.runner.Work(context.Background(), task)
	var denied *grants.DeniedError
	if !errors.As(err, &denied) || !strings.Contains(err.Error(), "step 1") {
		t.Fatalf("work: %v, want step 1 denied", err)
	}
	if got := e.performed("n"); len(got) != 1 {
		t.Errorf("performed %v, want step 0 only", got)
	}
	for _, en := range e.Journal(task) {
		if en.StepPath != "tool/0" {
			t.Errorf("recorded %s (%s)", en.StepPath, en.State)
		}
	}
}

// A compensation phase reads the grant before each compensation: one
// revoked by the compensation before it is refused, performing nothing.
func TestRevokeStopsTheNextCompensation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t)
	undoTool := &post{url: e.down.URL} // the compensations' tool, named "post" too: its own registry
	store := grants.NewStore(e.DB)
	if err := store.Put(ctx, "acme", &grants.Grant{Tools: []string{"post", "ship"}}); err != nil {
		t.Fatal(err)
	}
	reg := tools.NewRegistry(e.tool, &ship{})
	runner := steps.New(e.Ledger, reg)
	runner.Grants = store
	phase := saga.Phase(runner, &saga.Undoer{Ledger: e.Ledger, Journal: e.Ledger, Tools: tools.NewRegistry(undoTool, &ship{}),
		Grants: store})
	e.Enqueue(claims.EnqueueParams{Tenant: "acme", Payload: json.RawMessage(`{"steps":[` +
		`{"tool":"post","args":{"n":0},"compensate":{"tool":"post","args":{"undo":0}}},` +
		`{"tool":"post","args":{"n":1},"compensate":{"tool":"post","args":{"undo":1}}},` +
		`{"tool":"ship"}]}`)})
	task := e.claim()
	_, err := phase.Work(ctx, task)
	if e.fail(task, err) != agentledger.StateCompensating {
		t.Fatalf("forward path: %v, want compensating", err)
	}
	undoTool.after = revokeOnce(t, store, "post")
	task = e.claim()
	_, err = phase.Work(ctx, task)
	var denied *grants.DeniedError
	if !errors.As(err, &denied) || !strings.Contains(err.Error(), "compensation of tool/0") {
		t.Fatalf("compensation: %v, want tool/0's denied", err)
	}
	if len(undoTool.seen) != 1 || !strings.Contains(string(undoTool.seen[0]), `"undo":1`) {
		t.Errorf("undone %s, want step 1's only", undoTool.seen)
	}
	// Recorded failed, for an operator to settle; nothing was sent.
	rows := undoRows(e, task)
	if rows != ledger.UnbuiltPrefix+"post failed 0" {
		t.Errorf("compensation rows of tool/0: %v, want the unbuilt one, failed, never performed", rows)
	}
}

// refund is an unsafe tool recorded under its own name, as the HTTP tools
// are: its first call is lost in transit (an unknown outcome). keyed makes
// it keyed; refuse, a call refused for good (a 4xx).
type refund struct {
	calls         atomic.Int64
	keyed, refuse bool
}

func (*refund) Name() string                { return "refund" }
func (*refund) Description() string         { return "refunds" }
func (*refund) Parameters() json.RawMessage { return json.RawMessage(`{"type":"object"}`) }
func (r *refund) Effect(c tools.Call) (ledger.Effect, error) {
	class := ledger.Unsafe
	if r.keyed {
		class = ledger.Keyed
	}
	return ledger.Effect{Operation: "refund", Class: class, Request: c.Args,
		Perform: func(context.Context, ledger.Call) (ledger.Result, error) {
			n := r.calls.Add(1)
			switch {
			case r.refuse:
				return ledger.Result{}, agentledger.Permanent(errors.New("422: card closed"))
			case n == 1 && !r.keyed:
				return ledger.Result{}, errors.New("connection reset after the request was sent")
			}
			return ledger.Result{Status: 201}, nil
		}}, nil
}

// sagaWithGrant is a charge whose compensation is the refund tool, then a
// shipment that fails for good, for tenant acme granted post, ship and
// refund; the compensation phase reads the grant before each call.
func sagaWithGrant(t *testing.T) (*env, *grants.Store, *refund, saga.Handler, int64) {
	e := newEnv(t)
	store := grants.NewStore(e.DB)
	if err := store.Put(context.Background(), "acme", &grants.Grant{Tools: []string{"post", "ship", "refund"}}); err != nil {
		t.Fatal(err)
	}
	r := &refund{}
	reg := tools.NewRegistry(e.tool, &ship{}, r)
	runner := steps.New(e.Ledger, reg)
	runner.Grants = store
	phase := saga.Phase(runner, &saga.Undoer{Ledger: e.Ledger, Journal: e.Ledger, Tools: reg, Grants: store})
	e.phase = phase
	id := e.Enqueue(claims.EnqueueParams{Tenant: "acme", Payload: json.RawMessage(`{"steps":[` +
		`{"tool":"post","args":{"n":0},"compensate":{"tool":"refund","args":{"undo":0}}},{"tool":"ship"}]}`)}).ID
	task := e.claim()
	_, err := phase.Work(context.Background(), task)
	if e.fail(task, err) != agentledger.StateCompensating {
		t.Fatalf("forward path: %v, want compensating", err)
	}
	return e, store, r, phase, id
}

// regrantedAndReplayed is sagaWithGrant parked on its refund refused
// (the tool revoked), then granted the tool again and replayed: the next
// attempt may send the refund, which answers at once.
func regrantedAndReplayed(t *testing.T) (*env, *grants.Store, *refund, int64) {
	t.Helper()
	e, store, r, _, id := sagaWithGrant(t)
	r.calls.Store(1) // no call is lost in transit here
	parkRefused(t, e, store)
	regrant(t, store, "refund")
	if _, err := e.Operator.Replay(context.Background(), "", id); err != nil {
		t.Fatal(err)
	}
	return e, store, r, id
}

// undoRows lists the journal rows of task's compensation of step 0,
// "operation state performed", comma-separated.
func undoRows(e *env, task *agentledger.Task) string {
	var rows []string
	for _, en := range e.Journal(task) {
		if en.StepPath == saga.PathOf("tool/0") {
			rows = append(rows, fmt.Sprintf("%s %s %d", en.Operation, en.State, en.Performed))
		}
	}
	return strings.Join(rows, ",")
}

// regrant puts tool back in acme's grant.
func regrant(t *testing.T, store *grants.Store, tool string) {
	t.Helper()
	if _, err := store.Update(context.Background(), "acme", func(g *grants.Grant) { g.Tools = append(g.Tools, tool) }); err != nil {
		t.Fatal(err)
	}
}

// parkRefused revokes the refund tool and runs the compensation phase,
// which is refused it before anything is sent: the task parks.
func parkRefused(t *testing.T, e *env, store *grants.Store) {
	t.Helper()
	revoke(t, store, "refund")
	undo := e.claim()
	_, err := e.phase.Work(context.Background(), undo)
	if st := e.fail(undo, err); st != agentledger.StateNeedsAttention || !strings.Contains(err.Error(), "fix the cause and replay task") {
		t.Fatalf("refused refund: %s (%v), want needs_attention at once", st, err)
	}
}

// revoke takes tool out of acme's grant.
func revoke(t *testing.T, store *grants.Store, tool string) {
	t.Helper()
	if _, err := store.Update(context.Background(), "acme", func(g *grants.Grant) {
		g.Tools = slices.DeleteFunc(g.Tools, func(n string) bool { return n == tool })
	}); err != nil {
		t.Fatal(err)
	}
}

// A compensation whose call may have happened (its outcome unknown) and
// whose tool is then revoked stays unknown: the refusal is not recorded
// over it as a call never sent, which would have an operator refund by
// hand what may be refunded already.
func TestRevokedCompensationKeepsItsUnknownOutcome(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e, store, r, phase, _ := sagaWithGrant(t)
	undo := e.claim()
	_, err := phase.Work(ctx, undo)
	if !errors.Is(err, agentledger.ErrNeedsAttention) {
		t.Fatalf("lost refund: %v, want an unknown outcome", err)
	}
	e.fail(undo, err) // another attempt comes (the worker would park it; a replay would bring it back)
	revoke(t, store, "refund")
	again := e.claim()
	_, err = phase.Work(ctx, again)
	var denied *grants.DeniedError
	if !errors.As(err, &denied) || strings.Contains(err.Error(), "by hand") {
		t.Fatalf("revoked refund: %v, want the denial alone", err)
	}
	states := undoRows(e, again)
	if states != "refund unknown 1" || r.calls.Load() != 1 {
		t.Fatalf("compensation rows %v, %d calls; want the unknown one alone, called once", states, r.calls.Load())
	}
}

// A compensation refused before it was sent (its tool revoked) is
// recorded failed under an operation of its own; once the grant is back,
// a replay sends it, recorded under the tool's own, and the task ends
// compensated.
func TestRefusedCompensationSentAfterTheFix(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e, store, r, _, id := sagaWithGrant(t)
	r.calls.Store(1) // no call is lost in transit here
	parkRefused(t, e, store)
	p, err := e.Operator.Preview(ctx, "", id)
	if err != nil {
		t.Fatal(err)
	}
	var previewed []string
	for _, pe := range p.Effects {
		if pe.Step == saga.PathOf("tool/0") {
			previewed = append(previewed, fmt.Sprintf("%s %s %d %s %q", pe.Operation, pe.State, pe.Performed, pe.Plan, pe.Refused))
		}
	}
	if want := ledger.UnbuiltPrefix + `refund failed 0 will run "tenant \"acme\" has no grant for tool \"refund\" ` +
		`(agentctl tenant grant acme --tool refund)"`; strings.Join(previewed, ",") != want {
		t.Fatalf("preview of the unbuilt refund: %v, want %s", previewed, want)
	}
	regrant(t, store, "refund")
	if _, err := e.Operator.Replay(ctx, "", id); err != nil {
		t.Fatal(err)
	}
	e.undoToTheEnd(ctx)
	if r.calls.Load() != 2 || e.get(id).State != agentledger.StateCompensated {
		t.Fatalf("refund called %d times (want once after the fix), state %s", r.calls.Load()-1, e.get(id).State)
	}
}

// A replay preview of a task parked in its compensation does not mark a
// forward effect refused when its tool is revoked: the replay reads it to
// undo it and performs nothing of the forward path. The compensation
// whose tool is revoked is marked, in the preview and in the replay's
// own listing.
func TestPreviewOfACompensationChecksItsCompensationsOnly(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e, store, _, _, id := sagaWithGrant(t)
	parkRefused(t, e, store)
	revoke(t, store, "post")
	p, err := e.Operator.Preview(ctx, "", id)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, pe := range p.Effects {
		got = append(got, fmt.Sprintf("%s %t", pe.Step, pe.Refused != ""))
	}
	want := "tool/0 false,tool/1 false,compensate/tool/0 true"
	if strings.Join(got, ",") != want {
		t.Fatalf("preview (step, refused): %v, want %s", got, want)
	}
	// The replay's own listing marks the same.
	if p, err = e.Operator.Replay(ctx, "", id); err != nil {
		t.Fatal(err)
	}
	got = got[:0]
	for _, pe := range p.Effects {
		got = append(got, fmt.Sprintf("%s %t", pe.Step, pe.Refused != ""))
	}
	if strings.Join(got, ",") != want {
		t.Fatalf("replay (step, refused): %v, want %s", got, want)
	}
}

// Once the grant is back, the refused compensation's call is built: its
// unbuilt record goes, and when the call's answer is lost the operator
// may say it did not happen (retry), as for any unknown outcome.
func TestRefusedCompensationThenLost(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e, store, r, phase, id := sagaWithGrant(t)
	parkRefused(t, e, store)
	regrant(t, store, "refund")
	if _, err := e.Operator.Replay(ctx, "", id); err != nil {
		t.Fatal(err)
	}
	again := e.claim()
	_, err := phase.Work(ctx, again)
	if !errors.Is(err, agentledger.ErrNeedsAttention) {
		t.Fatalf("lost refund: %v, want an unknown outcome", err)
	}
	e.fail(again, err)
	rows := undoRows(e, again)
	if rows != "refund unknown 1" {
		t.Fatalf("compensation rows %v, want the built call's alone (its unbuilt record dropped)", rows)
	}
	if _, err := e.Operator.Resolve(ctx, "", id, saga.PathOf("tool/0"), operator.Resolution{Note: "the provider has no such refund"}); err != nil {
		t.Fatalf("resolve as not happened: %v", err)
	}
	e.undoToTheEnd(ctx)
	if r.calls.Load() != 2 || e.get(id).State != agentledger.StateCompensated {
		t.Fatalf("refund called %d times (want the lost one and one more), state %s", r.calls.Load(), e.get(id).State)
	}
}

// A keyed compensation refused for good, reopened by a replay (pending),
// then refused before it is sent (its tool revoked): nothing is recorded
// over its row, which may not be resolved as done (a pending call may
// have been sent); once the grant is back a replay sends it again under
// its key, and the task ends compensated.
func TestPendingCompensationReplayedAfterTheFix(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e, store, r, phase, id := sagaWithGrant(t)
	r.keyed, r.refuse = true, true
	undo := e.claim()
	_, err := phase.Work(ctx, undo)
	if st := e.fail(undo, err); st != agentledger.StateNeedsAttention {
		t.Fatalf("refused refund: %s (%v)", st, err)
	}
	r.refuse = false
	revoke(t, store, "refund")
	if _, err := e.Operator.Replay(ctx, "", id); err != nil {
		t.Fatal(err)
	}
	again := e.claim()
	_, err = phase.Work(ctx, again)
	if st := e.fail(again, err); st != agentledger.StateNeedsAttention || !strings.Contains(err.Error(), "a call of it was sent before: its row at compensate/tool/0 stands") {
		t.Fatalf("revoked refund: %s (%v)", st, err)
	}
	if _, err := e.Operator.Resolve(ctx, "", id, saga.PathOf("tool/0"), operator.Resolution{Done: true, Note: "refunded by hand"}); !errors.Is(err, agentledger.ErrConflict) ||
		!strings.Contains(err.Error(), "is pending: it may have been sent") {
		t.Fatalf("resolve of a pending compensation: %v, want it refused: it may have been sent", err)
	}
	regrant(t, store, "refund")
	if _, err := e.Operator.Replay(ctx, "", id); err != nil {
		t.Fatal(err)
	}
	e.undoToTheEnd(ctx)
	if r.calls.Load() != 2 || e.get(id).State != agentledger.StateCompensated {
		t.Fatalf("refund called %d times (want the refused one and one after the fix), state %s", r.calls.Load(), e.get(id).State)
	}
}

// resolvingJournal is the ledger as the Undoer's journal, with an
// operator who resolves the step's unbuilt record as done just before the
// attempt that built its call clears it.
type resolvingJournal struct {
	*ledger.Ledger
	resolve func()
}

func (j resolvingJournal) ClearUnbuilt(ctx context.Context, a ledger.Attempt, stepPath string) (bool, error) {
	j.resolve()
	return j.Ledger.ClearUnbuilt(ctx, a, stepPath)
}

// An operator who resolves an unbuilt compensation as done while an
// attempt is about to send it wins: the attempt sends nothing, and the
// next serves the step.
func TestResolvedWhileTheCallIsBuilt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e, store, r, id := regrantedAndReplayed(t)
	reg := tools.NewRegistry(e.tool, &ship{}, r)
	e.phase = saga.Phase(steps.New(e.Ledger, reg), &saga.Undoer{Ledger: e.Ledger, Tools: reg, Grants: store,
		Journal: resolvingJournal{e.Ledger, func() {
			if _, err := e.Operator.Resolve(ctx, "", id, saga.PathOf("tool/0"), operator.Resolution{Done: true, Note: "refunded by hand"}); err != nil {
				t.Errorf("resolve while the task runs: %v", err)
			}
		}}})
	again := e.claim()
	_, err := e.phase.Work(ctx, again)
	if err == nil || errors.As(err, new(*agentledger.PermanentError)) || r.calls.Load() != 1 {
		t.Fatalf("attempt racing the resolution: %v, %d calls; want a retry and none sent", err, r.calls.Load()-1)
	}
	e.fail(again, err)
	e.undoToTheEnd(ctx)
	if r.calls.Load() != 1 || e.get(id).State != agentledger.StateCompensated {
		t.Fatalf("refund called %d times (want none), state %s", r.calls.Load()-1, e.get(id).State)
	}
}

// flakyGrants is a grant source that fails for now while down is set.
type flakyGrants struct {
	grants.Source
	down *atomic.Bool
}

func (f flakyGrants) For(ctx context.Context, tenant string) (*grants.Grant, error) {
	if f.down.Load() {
		return nil, errors.New("connection refused")
	}
	return f.Source.For(ctx, tenant)
}

// An attempt that clears a refused compensation's record to send it, and
// then fails for now before the ledger takes the call (the grant cannot
// be read), puts the record back: were the attempts to run out, the task
// would park with a record an operator can resolve, not with none. Once
// the grant can be read the call is sent, once.
func TestClearedRecordPutBackWhenTheCallFailsForNow(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e, store, r, id := regrantedAndReplayed(t)
	down := new(atomic.Bool)
	down.Store(true)
	reg := tools.NewRegistry(e.tool, &ship{}, r)
	e.phase = saga.Phase(steps.New(e.Ledger, reg), &saga.Undoer{Ledger: e.Ledger, Journal: e.Ledger, Tools: reg,
		Grants: flakyGrants{store, down}})
	again := e.claim()
	_, err := e.phase.Work(ctx, again)
	if err == nil || errors.As(err, new(*agentledger.PermanentError)) || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("attempt with the grant unreadable: %v, want a retry", err)
	}
	rows := undoRows(e, again)
	if rows != ledger.UnbuiltPrefix+"refund failed 0" {
		t.Fatalf("compensation rows after the failed attempt: %v, want the unbuilt record back", rows)
	}
	e.fail(again, err)
	down.Store(false)
	e.undoToTheEnd(ctx)
	if r.calls.Load() != 2 || e.get(id).State != agentledger.StateCompensated {
		t.Fatalf("refund called %d times (want once), state %s", r.calls.Load()-1, e.get(id).State)
	}
}

// A compensation whose tool is not registered here, for good, is recorded
// as one that cannot be sent: the operator who undid the effect by hand
// resolves it, and the task ends compensated.
func TestCompensationOfAnUnregisteredTool(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e, _, _, _, id := sagaWithGrant(t)
	reg := tools.NewRegistry(e.tool, &ship{}) // no refund tool
	e.phase = saga.Phase(steps.New(e.Ledger, reg), &saga.Undoer{Ledger: e.Ledger, Journal: e.Ledger, Tools: reg})
	undo := e.claim()
	_, err := e.phase.Work(ctx, undo)
	if st := e.fail(undo, err); st != agentledger.StateNeedsAttention || !strings.Contains(err.Error(), "cannot be sent") {
		t.Fatalf("unregistered refund: %s (%v)", st, err)
	}
	if _, err := e.Operator.Resolve(ctx, "", id, saga.PathOf("tool/0"), operator.Resolution{Done: true, Note: "refunded by hand"}); err != nil {
		t.Fatal(err)
	}
	e.undoToTheEnd(ctx)
	if e.get(id).State != agentledger.StateCompensated {
		t.Fatalf("state %s, want compensated", e.get(id).State)
	}
}

// resolvingUnbuilt is the ledger as the Undoer's journal, with an operator
// who resolves the step's unbuilt record as done just before the attempt,
// whose call cannot be built again, records it.
type resolvingUnbuilt struct {
	*ledger.Ledger
	resolve func()
}

func (j resolvingUnbuilt) Unbuilt(ctx context.Context, a ledger.Attempt, stepPath, operation, why string) (ledger.UnbuiltOutcome, error) {
	j.resolve()
	return j.Ledger.Unbuilt(ctx, a, stepPath, operation, why)
}

// An operator who resolves a compensation that cannot be built while an
// attempt fails to build it again wins: the attempt parks nothing and
// the next serves the step (the task is not parked with advice about a
// call that was never sent).
func TestResolvedWhileTheCallFailsToBuild(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newSagaEnv(t)
	id, undo, err := e.unbuildable(ctx)
	if st := e.fail(undo, err); st != agentledger.StateNeedsAttention {
		t.Fatalf("unbuilt refund: %s (%v)", st, err)
	}
	if _, err := e.Operator.Replay(ctx, "", id); err != nil {
		t.Fatal(err)
	}
	reg := tools.NewRegistry(e.tool, &ship{})
	e.phase = saga.Phase(steps.New(e.Ledger, reg), &saga.Undoer{Ledger: e.Ledger, Tools: reg,
		Journal: resolvingUnbuilt{e.Ledger, func() {
			if _, err := e.Operator.Resolve(ctx, "", id, saga.PathOf("tool/0"), operator.Resolution{Done: true, Note: "refunded by hand"}); err != nil {
				t.Errorf("resolve while the task runs: %v", err)
			}
		}}})
	again := e.claim()
	_, err = e.phase.Work(ctx, again)
	if err == nil || errors.As(err, new(*agentledger.PermanentError)) || !strings.Contains(err.Error(), "read again") {
		t.Fatalf("attempt racing the resolution: %v, want a retry", err)
	}
	e.fail(again, err)
	e.undoToTheEnd(ctx)
	if n := len(e.performed("refund")); n != 0 || e.get(id).State != agentledger.StateCompensated {
		t.Fatalf("refund performed %d times, state %s; want none, compensated", n, e.get(id).State)
	}
}
