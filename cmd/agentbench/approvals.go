package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"
	"time"

	"github.com/agentledger/agentledger/agentledgertest/downstream"
	"github.com/agentledger/agentledger/approvals"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/daemon"
)

// ApprovalsFlags configure the approvals command.
type ApprovalsFlags struct {
	CommonFlags
	Requests int
	Rate     float64
}

func runApprovals(ctx context.Context, args []string, out, errOut io.Writer) error {
	f := ApprovalsFlags{}
	fs := newFlagSet("approvals",
		"Queues steps tasks whose one keyed POST is gated on approval, waits until every task asks, then approves the "+
			"requests one by one at --rate a second (approvals.Store.Decide, as agentctl approve does) and measures, for "+
			"each, the time from the decision's commit to the POST reaching a loopback downstream: the decision's wake-up, "+
			"the claim, the gate and the call.", errOut)
	f.register(fs)
	fs.IntVar(&f.Requests, "requests", 200, "gated tasks, each one request")
	fs.Float64Var(&f.Rate, "rate", 20, "decisions a second")
	if err := parseFlags(fs, args, &f.CommonFlags); err != nil {
		return err
	}
	if f.Requests <= 0 || f.Rate <= 0 {
		return errors.New("--requests and --rate must be positive")
	}
	srv, log, err := f.open(ctx, errOut)
	if err != nil {
		return err
	}
	defer srv.Close()
	fmt.Fprintf(out, "# approvals: %d steps tasks, each one keyed POST gated on approval; decisions at %.0f/s; %s\n# %s, GOMAXPROCS=%d, %d CPUs\n\n",
		f.Requests, f.Rate, srv.Describe(ctx), runtime.Version(), runtime.GOMAXPROCS(0), runtime.NumCPU())

	ctx, cancel := context.WithTimeout(ctx, f.RunTimeout)
	defer cancel()
	rdb, err := srv.Fresh(ctx)
	if err != nil {
		return err
	}
	defer rdb.Close()
	db, err := rdb.Pool(ctx, 4)
	if err != nil {
		return err
	}
	defer db.Close()
	dpool, err := rdb.DaemonPool(ctx, 20)
	if err != nil {
		return err
	}
	defer dpool.Close()

	down := downstream.New()
	defer down.Close()
	var mu sync.Mutex
	arrived := map[string]time.Time{} // by body
	down.SetAfter(func(_, _ string, body []byte) {
		mu.Lock()
		arrived[string(body)] = time.Now()
		mu.Unlock()
	})
	url, err := rdb.URL()
	if err != nil {
		return err
	}
	d, err := newDaemon(daemon.Config{
		Database:    daemon.Database{URL: url},
		Worker:      daemon.Worker{PollInterval: time.Second},
		Maintenance: daemon.Maintenance{NoCron: true, NoJanitor: true},
		Notify:      daemon.Notifications{NoDispatch: true},
		HTTPTools:   daemon.HTTPTools{AllowedHosts: []string{down.URL}},
		Logger:      log,
		Stdout:      io.Discard,
	}, DaemonSpec{})
	if err != nil {
		return err
	}
	dctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- d.Run(dctx) }()
	defer func() { stop(); <-done }()
	select {
	case <-d.Ready():
	case err := <-done:
		return fmt.Errorf("the daemon stopped: %w", err)
	}

	store := claims.New(db)
	for i := range f.Requests {
		payload := fmt.Sprintf(`{"steps":[{"tool":"http_request","args":{"method":"POST","url":%q,"body":{"n":%d}},"approve":true}]}`,
			down.URL+"/charges", i)
		if _, err := store.Enqueue(ctx, claims.EnqueueParams{Kind: "steps", Payload: json.RawMessage(payload)}); err != nil {
			return err
		}
	}
	gates := approvals.NewStore(db)
	var pending []approvals.Request
	for len(pending) < f.Requests {
		if pending, err = gates.List(ctx, approvals.ListParams{Limit: f.Requests}); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d of %d tasks asked: %w", len(pending), f.Requests, ctx.Err())
		case <-time.After(50 * time.Millisecond): // polling the daemon's requests: nothing signals them
		}
	}
	decided := make([]time.Time, len(pending))
	bodies := make([]string, len(pending))
	tick := time.NewTicker(time.Duration(float64(time.Second) / f.Rate))
	defer tick.Stop()
	for i, r := range pending {
		<-tick.C
		var call struct {
			Body json.RawMessage `json:"body"`
		}
		_ = json.Unmarshal(r.Call, &call)
		compact, _ := json.Marshal(call.Body)
		bodies[i] = string(compact)
		if _, won, err := gates.Decide(ctx, approvals.Decision{ID: r.ID, Approve: true, By: "bench", Via: "agentctl"}); err != nil || !won {
			return fmt.Errorf("approving request %d: won %v: %v", r.ID, won, err)
		}
		decided[i] = time.Now()
	}
	var lats []time.Duration
	for deadline := time.Now().Add(time.Minute); ; {
		mu.Lock()
		n := len(arrived)
		mu.Unlock()
		if n >= len(pending) || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond) // polling the downstream: the last effects are in flight
	}
	mu.Lock()
	for i, b := range bodies {
		if at, ok := arrived[b]; ok {
			lats = append(lats, at.Sub(decided[i]))
		}
	}
	mu.Unlock()
	p := Summarise(lats)
	t := NewTable("requests", "effects", "p50 ms", "p90 ms", "p99 ms", "max ms", "mean ms")
	t.Add(len(pending), down.Effects(), ms(p.P50), ms(p.P90), ms(p.P99), ms(p.Max), ms(p.Mean))
	t.Print(out)
	if down.Effects() != int64(len(pending)) {
		return fmt.Errorf("%d effects for %d approved requests", down.Effects(), len(pending))
	}
	return nil
}
