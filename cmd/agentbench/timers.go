package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"time"

	"github.com/agentledger/agentledger/claims"
)

// TimersFlags configure the timers command.
type TimersFlags struct {
	CommonFlags
	Rate         int
	Duration     time.Duration
	Lead         time.Duration
	Concurrency  int
	MaxConns     int
	PollInterval time.Duration
}

func runTimers(ctx context.Context, args []string, out, errOut io.Writer) error {
	f := TimersFlags{}
	fs := newFlagSet("timers",
		"Starts durable timers through the wait_timer tool — steps tasks whose one step is wait_timer until a time — "+
			"due --rate a second for --duration, the first --lead after the run starts; waits until every task parked, "+
			"then until every timer fired, and reports the lateness of each: the time its task resumed (the call's "+
			"fired_at, taken when the resumed step finds its timer due) less its due time.", errOut)
	f.register(fs)
	fs.IntVar(&f.Rate, "rate", 1000, "timers coming due a second")
	fs.DurationVar(&f.Duration, "duration", 30*time.Second, "how long timers come due")
	fs.DurationVar(&f.Lead, "lead", 2*time.Minute, "from the first enqueue to the first due time: every task must have parked by then")
	fs.IntVar(&f.Concurrency, "concurrency", 50, "the daemon's concurrency")
	fs.IntVar(&f.MaxConns, "max-conns", 0, "the daemon's connection pool size (0: twice the concurrency and 8: "+
		"a wait call holds two connections, its ledger reservation's and its own)")
	fs.DurationVar(&f.PollInterval, "poll-interval", 0, "the daemon's poll interval (0: the worker default, 1s)")
	fs.Lookup("run-timeout").DefValue = "--lead + --duration + 2m"
	if err := parseFlags(fs, args, &f.CommonFlags); err != nil {
		return err
	}
	if !flagSet(fs, "run-timeout") {
		f.RunTimeout = f.Lead + f.Duration + 2*time.Minute
	}
	total := int(float64(f.Rate) * f.Duration.Seconds())
	if f.Rate <= 0 || f.Duration <= 0 || f.Lead <= 0 || f.Concurrency <= 0 || f.PollInterval < 0 || f.MaxConns < 0 {
		return errors.New("--rate, --duration, --lead and --concurrency must be positive, --poll-interval and --max-conns not negative")
	}
	if f.RunTimeout <= f.Lead+f.Duration {
		return errors.New("--run-timeout must be longer than --lead and --duration together")
	}
	if total == 0 {
		return errors.New("--rate times --duration is less than one timer")
	}
	srv, log, err := f.open(ctx, errOut)
	if err != nil {
		return err
	}
	defer srv.Close()
	poll := f.PollInterval
	if poll == 0 {
		poll = time.Second
	}
	fmt.Fprintf(out, "# timers: %d durable timers (wait_timer), %d coming due a second for %s, the first %s after the start; "+
		"daemon concurrency %d, poll %s; %s\n# %s, GOMAXPROCS=%d, %d CPUs\n\n",
		total, f.Rate, f.Duration, f.Lead, f.Concurrency, poll, srv.Describe(ctx), runtime.Version(), runtime.GOMAXPROCS(0), runtime.NumCPU())

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
	stop, err := startDaemon(ctx, rdb, nil, f.Concurrency, f.MaxConns, f.PollInterval, log)
	if err != nil {
		return err
	}
	defer stop()

	// Timer i is due at first + i/rate: the sequence is the schedule.
	start := time.Now()
	first := start.Add(f.Lead)
	every := time.Second / time.Duration(f.Rate)
	store := claims.New(db)
	const batchSize = 1000
	batch := make([]claims.EnqueueParams, 0, batchSize)
	for done := 0; done < total; done += len(batch) {
		batch = batch[:0]
		for i := done; i < total && len(batch) < batchSize; i++ {
			due := first.Add(time.Duration(i) * every).UTC().Format(time.RFC3339Nano)
			batch = append(batch, claims.EnqueueParams{Kind: "steps",
				Payload: json.RawMessage(`{"steps":[{"tool":"wait_timer","args":{"until":"` + due + `"}}]}`)})
		}
		if _, err := store.EnqueueBatch(ctx, batch); err != nil {
			return fmt.Errorf("enqueueing timers: %w", err)
		}
	}
	pctx, pcancel := context.WithDeadline(ctx, first)
	err = awaitParked(pctx, db, 0, total)
	pcancel()
	if err != nil {
		return fmt.Errorf("before the first timer came due (--lead %s): %w; give a longer --lead", f.Lead, err)
	}
	fmt.Fprintf(errOut, "timers: %d tasks parked in %.1fs\n", total, time.Since(start).Seconds())

	select {
	case <-time.After(time.Until(first)): // the schedule's start: nothing is due before
	case <-ctx.Done():
		return ctx.Err()
	}
	watch, err := watchPhase(ctx, f.CommonFlags, db, "timers")
	if err != nil {
		return err
	}
	cpu := StartCPU(ctx, db)
	last := first.Add(time.Duration(total-1) * every)
	for {
		var left, failed int
		if err := db.QueryRow(ctx, `SELECT count(*) FILTER (WHERE state <> 'succeeded'),
			count(*) FILTER (WHERE state IN ('dead', 'cancelled', 'needs_attention')) FROM tasks`).Scan(&left, &failed); err != nil {
			return err
		}
		if failed > 0 {
			return fmt.Errorf("%d timers' tasks failed", failed)
		}
		if left == 0 {
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d of %d timers' tasks not finished %s after the last came due: %w",
				left, total, time.Since(last).Round(time.Millisecond), ctx.Err())
		case <-time.After(250 * time.Millisecond): // polling: nothing signals a timer's end to the benchmark; a scan of the tasks a poll
		}
	}
	use := cpu.Stop(ctx)
	watch.stop(ctx, out, "timers", total)

	rows, err := db.Query(ctx, `SELECT w.deadline, w.result ->> 'fired_at', t.finished_at
		FROM waits w JOIN tasks t ON t.id = w.task_id
		WHERE w.kind = 'timer' AND w.state = 'done' AND w.ended_by = 'timer'`)
	if err != nil {
		return err
	}
	var resumed, finished []time.Duration
	var firstDue, lastFired time.Time
	for rows.Next() {
		var due, done time.Time
		var fired string
		if err := rows.Scan(&due, &fired, &done); err != nil {
			rows.Close()
			return err
		}
		at, err := time.Parse(time.RFC3339Nano, fired)
		if err != nil {
			rows.Close()
			return fmt.Errorf("a timer's fired_at %q: %w", fired, err)
		}
		if firstDue.IsZero() || due.Before(firstDue) {
			firstDue = due
		}
		if at.After(lastFired) {
			lastFired = at
		}
		resumed = append(resumed, at.Sub(due))
		finished = append(finished, done.Sub(due))
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if len(resumed) != total {
		return fmt.Errorf("%d of %d timers fired", len(resumed), total)
	}
	r, d := Summarise(resumed), Summarise(finished)
	// fired/s is the rate the timers resumed at, from the first due time
	// to the last resumption: below due/s, the daemon fell behind.
	firedRate := float64(len(resumed)) / max(lastFired.Sub(firstDue).Seconds(), 1e-3)
	t := NewTable(append([]string{"timers", "due/s", "fired", "fired/s", "p50 ms", "p90 ms", "p99 ms", "p99.9 ms", "max ms", "mean ms",
		"done p50 ms", "done p99 ms"}, cpuHeader...)...)
	t.Add(append([]any{total, f.Rate, len(resumed), fmt.Sprintf("%.0f", firedRate), ms(r.P50), ms(r.P90), ms(r.P99), ms(r.P999), ms(r.Max), ms(r.Mean),
		ms(d.P50), ms(d.P99)}, use.cells(total)...)...)
	t.Print(out)
	fmt.Fprintf(errOut, "timers: lateness p50 %s ms, p99 %s ms\n", ms(r.P50), ms(r.P99))
	return nil
}
