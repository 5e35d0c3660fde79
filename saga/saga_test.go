package saga_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/internal/test/testenv"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/saga"
	"github.com/agentledger/agentledger/tools"
)

// shop is a keyed downstream that records what it did, once per key.
type shop struct {
	mu   sync.Mutex
	done map[string]string // downstream key → what
	log  []string          // in order
}

type order struct {
	Op    string `json:"op"`
	Order int    `json:"order,omitempty"`
	Of    string `json:"of,omitempty"`
}

func (s *shop) tool(t *testing.T) tools.Tool {
	tool, err := tools.Define(tools.Spec[order]{Name: "shop", Class: ledger.Keyed,
		Perform: func(_ context.Context, c ledger.Call, o order) (ledger.Result, error) {
			s.mu.Lock()
			defer s.mu.Unlock()
			key := c.DownstreamKey("shop")
			if _, ok := s.done[key]; !ok {
				s.done[key] = o.Op
				s.log = append(s.log, strings.TrimSpace(o.Op+" "+o.Of))
			}
			return ledger.Result{Status: 200, Body: json.RawMessage(fmt.Sprintf(`{"id":"%s-%d"}`, o.Op, o.Order))}, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	return tool
}

// shopEnv is a database, a shop, and the Undoer of a Go kind calling it.
func shopEnv(t *testing.T) (*testenv.Env, *shop, *saga.Undoer) {
	e := testenv.New(t)
	s := &shop{done: map[string]string{}}
	return e, s, &saga.Undoer{Ledger: e.Ledger, Journal: e.Ledger, Tools: tools.NewRegistry(s.tool(t))}
}

// A Go kind declares each call's compensation with the call; when it then
// fails for good, its completed calls are undone newest first, once each.
func TestGoKindCompensations(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e, s, undoer := shopEnv(t)
	kind := saga.Phase(handler(func(ctx context.Context, task *agentledger.Task) (json.RawMessage, error) {
		for _, op := range []string{"charge", "reserve"} {
			undo := &saga.Compensation{Tool: "shop", Args: json.RawMessage(`{"op":"un` + op + `","of":"${self.body.id}"}`)}
			if _, err := saga.Call(ctx, task, op, "shop", order{Op: op, Order: 7}, undo); err != nil {
				return nil, err
			}
		}
		return nil, agentledger.Permanent(errors.New("no courier"))
	}), undoer)

	e.Enqueue(claims.EnqueueParams{Kind: "order"})
	task := e.Claim("w")
	_, err := kind.Work(ctx, task)
	st, ferr := e.Claims.Fail(ctx, claims.Failure{Lease: claims.LeaseOf(task), Error: err.Error(), Final: true})
	if ferr != nil || st != agentledger.StateCompensating {
		t.Fatalf("after the failure: %s %v", st, ferr)
	}
	undo := e.Claim("w")
	res, err := kind.Work(ctx, undo)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Claims.Succeed(ctx, claims.LeaseOf(undo), res); err != nil {
		t.Fatal(err)
	}
	got, _ := e.Claims.Get(ctx, "", task.ID)
	if want := "charge,reserve,unreserve reserve-7,uncharge charge-7"; strings.Join(s.log, ",") != want || got.State != agentledger.StateCompensated {
		t.Fatalf("shop saw %q, want %q; task %s", strings.Join(s.log, ","), want, got.State)
	}
	if !strings.Contains(string(res), `"undoes":"call/reserve"`) {
		t.Fatalf("result %s", res)
	}
}

// Call outside a task handler's context says so, for good: retrying
// cannot change the code that made it.
func TestCallOutsideAHandler(t *testing.T) {
	_, err := saga.Call(context.Background(), &agentledger.Task{ID: 1}, "charge", "shop", nil, nil)
	if err == nil || !strings.Contains(err.Error(), "not a task handler's") || !errors.As(err, new(*agentledger.PermanentError)) {
		t.Fatalf("got %v, want a permanent error", err)
	}
}

// A kind's mistakes that retrying cannot fix fail its task for good, and
// before anything is sent: a compensation naming a tool that does not
// exist (found out otherwise only when the effect must be undone), one
// calling a tool that changes nothing (the task would end compensated
// with its effect in place), and a
// second call at a place already used with another request.
func TestCallRefusesMistakesForGood(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e, s, undoer := shopEnv(t)
	lookup, err := tools.Define(tools.Spec[order]{Name: "lookup", Class: ledger.Pure,
		Perform: func(context.Context, ledger.Call, order) (ledger.Result, error) {
			return ledger.Result{Status: 200}, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	undoer.Tools = tools.NewRegistry(s.tool(t), lookup)
	kind := saga.Phase(handler(func(ctx context.Context, task *agentledger.Task) (json.RawMessage, error) {
		var p struct{ Mistake string }
		if err := json.Unmarshal(task.Payload, &p); err != nil {
			return nil, err
		}
		switch p.Mistake {
		case "undo":
			_, err := saga.Call(ctx, task, "charge", "shop", order{Op: "charge"}, &saga.Compensation{Tool: "shopp"})
			return nil, err
		case "nil":
			_, err := saga.Call(ctx, nil, "charge", "shop", order{Op: "charge"}, nil)
			return nil, err
		case "path":
			_, err := saga.Call(ctx, task, "charge\nnow", "shop", order{Op: "charge"}, nil)
			return nil, err
		case "pure":
			_, err := saga.Call(ctx, task, "charge", "shop", order{Op: "charge"}, &saga.Compensation{Tool: "lookup"})
			return nil, err
		default:
			if _, err := saga.Call(ctx, task, "charge", "shop", order{Op: "charge", Order: 1}, nil); err != nil {
				return nil, err
			}
			_, err := saga.Call(ctx, task, "charge", "shop", order{Op: "charge", Order: 2}, nil)
			return nil, err
		}
	}), undoer)
	for payload, want := range map[string]string{
		`{"mistake":"undo"}`:  `saga.Call charge: its compensation: unknown tool "shopp" (known: lookup, shop)`,
		`{"mistake":"pure"}`:  `saga.Call charge: its compensation: lookup changes nothing, so it undoes nothing`,
		`{"mistake":"path"}`:  `saga.Call: path "charge\nnow" must name the call`,
		`{"mistake":"nil"}`:   `saga.Call: no task`,
		`{"mistake":"place"}`: `saga.Call charge (shop): the call differs from the one recorded at this place`,
	} {
		e.Enqueue(claims.EnqueueParams{Kind: "order", Payload: json.RawMessage(payload)})
		task := e.Claim("w")
		_, err := kind.Work(ctx, task)
		if !errors.As(err, new(*agentledger.PermanentError)) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want a permanent error: %s", payload, err, want)
		}
		if err := e.Claims.Succeed(ctx, claims.LeaseOf(task), nil); err != nil {
			t.Fatal(err)
		}
	}
	if want := "charge"; strings.Join(s.log, ",") != want {
		t.Fatalf("shop saw %q, want %q (the first place's call alone)", strings.Join(s.log, ","), want)
	}
}

type handler func(ctx context.Context, t *agentledger.Task) (json.RawMessage, error)

func (h handler) Work(ctx context.Context, t *agentledger.Task) (json.RawMessage, error) {
	return h(ctx, t)
}
