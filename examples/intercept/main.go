// Command intercept adds two interceptors of its own to the path every
// effect takes (daemon.Intercept): an audit log that writes one line per
// effect, saying whether the ledger served it from its record or it was
// performed, and a policy that parks a refund above 100 for a person
// (needs_attention) instead of performing it. It runs a small refund,
// replays it, and asks for a large one.
//
//	go run ./examples/intercept      # on the embedded cluster ($AGENTLEDGER_STATE_DIR, else agentd's default), or DATABASE_URL
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/client"
	"github.com/agentledger/agentledger/daemon"
	"github.com/agentledger/agentledger/database"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/operator"
	"github.com/agentledger/agentledger/tools"
)

// Refund is the argument of the refund tool.
type Refund struct {
	Order  int `json:"order" jsonschema:"the order refunded"`
	Amount int `json:"amount" jsonschema:"in cents"`
}

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "intercept:", err)
		os.Exit(1)
	}
}

// queue is the example's own: its daemon claims no task but its own,
// and no other daemon claims those.
const queue = "example-intercept"

func run(ctx context.Context, out io.Writer) error {
	var mu sync.Mutex
	refunded := 0
	refund, err := tools.Define(tools.Spec[Refund]{
		Name: "refund", Description: "Refund an order", Class: ledger.Keyed,
		Perform: func(_ context.Context, c ledger.Call, r Refund) (ledger.Result, error) {
			mu.Lock()
			defer mu.Unlock()
			refunded += r.Amount // a real one sends c.DownstreamKey("payments") along
			return ledger.Result{Status: 201, Body: json.RawMessage(fmt.Sprintf(`{"refunded":%d}`, r.Amount))}, nil
		},
	})
	if err != nil {
		return err
	}

	// Where the daemon keeps its state; the client below opens the same.
	state := daemon.Database{URL: os.Getenv("DATABASE_URL")}
	d := daemon.New(daemon.Config{
		Database:    state,
		Worker:      daemon.Worker{Queues: []string{queue}, PollInterval: 100 * time.Millisecond},
		Maintenance: daemon.Maintenance{NoCron: true, NoJanitor: true},
		Logger:      slog.New(slog.NewTextHandler(io.Discard, nil)),
		Stdout:      io.Discard,
	})
	if err := d.RegisterTool(refund); err != nil {
		return err
	}
	// Interceptors run in the order added, after the grant is checked and
	// before the ledger: the audit line is written for every effect, the
	// policy decides after it.
	if err := d.Intercept(audit(out)); err != nil {
		return err
	}
	if err := d.Intercept(approveLargeRefunds); err != nil {
		return err
	}

	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	done := make(chan struct{})
	var runErr error
	go func() { runErr = d.Run(runCtx); close(done) }()
	defer func() { stop(); <-done }()
	select {
	case <-d.Ready():
	case <-done:
		return fmt.Errorf("the daemon stopped: %w", runErr)
	}
	conn, err := database.Open(ctx, database.Config{URL: state.URL, StateDir: state.StateDir})
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	sub, store := client.Database(conn.Pool, ""), claims.New(conn.Pool)

	small, err := submitRefund(ctx, sub, 7, 40)
	if err != nil {
		return err
	}
	if _, err := waitFor(ctx, store, small, agentledger.StateSucceeded); err != nil {
		return err
	}
	if _, err := operator.New(conn.Pool).Replay(ctx, "", small); err != nil {
		return err
	}
	if _, err := waitFor(ctx, store, small, agentledger.StateSucceeded); err != nil {
		return err
	}
	large, err := submitRefund(ctx, sub, 8, 500)
	if err != nil {
		return err
	}
	parked, err := waitFor(ctx, store, large, agentledger.StateNeedsAttention)
	if err != nil {
		return err
	}
	mu.Lock()
	defer mu.Unlock()
	fmt.Fprintf(out, "task %d parked: %s\nrefunded in all: %d\n", large, parked.LastError, refunded)
	return nil
}

// audit writes a line per effect (a model completion too, whose Name is
// its operation): which task, tool and journal place, and whether the ledger will serve it from its record (a replay) or the
// effect is performed.
func audit(out io.Writer) tools.Interceptor {
	var mu sync.Mutex
	return func(ctx context.Context, o *tools.Outgoing, next tools.Next) (ledger.Result, error) {
		recorded, err := o.Recorded(ctx)
		if err != nil {
			return ledger.Result{}, err // the attempt is retried
		}
		how := "performing"
		if recorded {
			how = "served from the ledger"
		}
		res, err := next(ctx, o)
		if err != nil {
			how = "stopped: " + err.Error()
		}
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(out, "audit: task %d %s at %s (%s) %s %s\n", o.Task.ID, o.Name(), o.StepPath, o.Effect.Class, o.Args, how)
		return res, err
	}
}

// approveLargeRefunds parks a refund above 100 for a person instead of
// performing it; a refund the ledger already recorded (a replay) is not
// asked about again.
func approveLargeRefunds(ctx context.Context, o *tools.Outgoing, next tools.Next) (ledger.Result, error) {
	if o.Name() != "refund" {
		return next(ctx, o)
	}
	var r Refund
	if err := json.Unmarshal(o.Args, &r); err != nil || r.Amount <= 100 {
		return next(ctx, o) // the tool refuses bad arguments itself
	}
	if recorded, err := o.Recorded(ctx); err != nil || recorded {
		return next(ctx, o)
	}
	return ledger.Result{}, tools.Park(fmt.Sprintf("a refund of %d for order %d needs a person's approval", r.Amount, r.Order))
}

func submitRefund(ctx context.Context, sub client.Submitter, order, amount int) (int64, error) {
	args, _ := json.Marshal(Refund{Order: order, Amount: amount})
	t, err := sub.Submit(ctx, client.Request{Kind: "steps", Options: client.Options{Queue: queue},
		Payload: json.RawMessage(fmt.Sprintf(`{"steps":[{"tool":"refund","args":%s}]}`, args))})
	if err != nil {
		return 0, err
	}
	return t.ID, nil
}
