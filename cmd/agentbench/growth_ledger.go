package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"time"

	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/tools"
)

// LedgerGrowthResult is one size of the ledger sweep.
type LedgerGrowthResult struct {
	Rows  int64
	Bytes int64 // the ledger with its indexes
	Hit   Percentiles
	Fresh Percentiles
	Find  Percentiles
}

// errPerformed is what a replay hit's performer returns: it must never run.
var errPerformed = errors.New("agentbench: an effect the ledger should have served was performed")

// ledgerGrowthRun measures ledger.Do and ledger.Find with n other rows in
// the ledger, on a fresh database.
func ledgerGrowthRun(ctx context.Context, srv *Server, f GrowthFlags, n int64, errOut io.Writer) (LedgerGrowthResult, error) {
	res := LedgerGrowthResult{Rows: n}
	ctx, cancel := context.WithTimeout(ctx, f.RunTimeout)
	defer cancel()
	rdb, ctl, err := srv.FreshControl(ctx)
	if err != nil {
		return res, err
	}
	defer rdb.Close()
	defer ctl.Close()

	// The task whose effects are measured, claimed for the whole run.
	db, err := rdb.DaemonPool(ctx, 1)
	if err != nil {
		return res, err
	}
	defer db.Close()
	store := claims.New(db)
	if _, err := store.Enqueue(ctx, claims.EnqueueParams{Kind: "noop"}); err != nil {
		return res, err
	}
	tasks, err := store.Claim(ctx, claims.ClaimParams{Queue: claims.DefaultQueue, Worker: "bench-ledger", Limit: 1,
		Lease: time.Hour})
	if err != nil {
		return res, err
	}
	if len(tasks) != 1 {
		return res, errors.New("the benchmark's task could not be claimed")
	}
	task := tasks[0]
	attempt := tools.AttemptOf(task)
	request := json.RawMessage(`{"method":"POST","url":"http://bench.invalid/charges","body":{"amount":1}}`)
	hash, err := ledger.RequestHash(request)
	if err != nil {
		return res, err
	}

	// The task's effects come first, then n others.
	k := int64(f.Effects)
	if err := fill(ctx, ctl, errOut, "ledger rows", k+n, ledgerRowsSQL, k, task.ID, hash); err != nil {
		return res, err
	}
	if err := timed(errOut, "VACUUM ANALYZE, CHECKPOINT", func() error { return rdb.Settle(ctx, ctl, "ledger") }); err != nil {
		return res, err
	}
	if err := ctl.QueryRow(ctx, "SELECT pg_total_relation_size('ledger')").Scan(&res.Bytes); err != nil {
		return res, err
	}
	key := ledger.EffectKey(attempt.Tenant, task.ID, attempt.Generation, "tool/0", "http_request")
	var found bool
	if err := ctl.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM ledger
WHERE tenant = $1 AND operation = 'http_request' AND effect_key = $2)`, attempt.Tenant, key).Scan(&found); err != nil {
		return res, err
	}
	if !found {
		return res, errors.New("the fixture's effect keys no longer match ledger.EffectKey: update ledgerRowsSQL")
	}

	l := ledger.New(db)
	effect := func(step int, perform func(context.Context, ledger.Call) (ledger.Result, error)) ledger.Effect {
		return ledger.Effect{Operation: "http_request", StepPath: fmt.Sprintf("tool/%d", step), Class: ledger.Keyed,
			Request: request, Perform: perform}
	}
	mustNot := func(context.Context, ledger.Call) (ledger.Result, error) { return ledger.Result{}, errPerformed }
	noop := func(context.Context, ledger.Call) (ledger.Result, error) {
		return ledger.Result{Status: 201, Body: json.RawMessage(`{"id":"eff_new"}`)}, nil
	}
	// Warm the connection and its statement cache on a step that is not
	// measured.
	if _, err := l.Do(ctx, attempt, effect(int(2*k), noop)); err != nil {
		return res, err
	}

	hits := make([]time.Duration, 0, k)
	for _, step := range rand.Perm(int(k)) {
		start := time.Now()
		r, err := l.Do(ctx, attempt, effect(step, mustNot))
		hits = append(hits, time.Since(start))
		if err != nil {
			return res, fmt.Errorf("replay hit of step %d: %w", step, err)
		}
		if !r.Replayed {
			return res, fmt.Errorf("step %d was not served by the ledger", step)
		}
	}
	res.Hit = Summarise(hits)

	fresh := make([]time.Duration, 0, k)
	for i := range int(k) {
		start := time.Now()
		r, err := l.Do(ctx, attempt, effect(int(k)+i, noop))
		fresh = append(fresh, time.Since(start))
		if err != nil {
			return res, fmt.Errorf("fresh effect %d: %w", i, err)
		}
		if r.Replayed {
			return res, fmt.Errorf("fresh effect %d was served by the ledger", i)
		}
	}
	res.Fresh = Summarise(fresh)

	finds := make([]time.Duration, 0, f.FindSamples)
	for range f.FindSamples {
		step := rand.IntN(int(k))
		key := ledger.EffectKey(attempt.Tenant, task.ID, attempt.Generation, fmt.Sprintf("tool/%d", step), "http_request")
		start := time.Now()
		got, err := l.Find(ctx, ledger.FindParams{Key: key})
		finds = append(finds, time.Since(start))
		if err != nil {
			return res, fmt.Errorf("ledger.Find: %w", err)
		}
		if len(got) != 1 {
			return res, fmt.Errorf("ledger.Find by key found %d effects, want 1", len(got))
		}
	}
	res.Find = Summarise(finds)
	return res, nil
}
