package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"runtime"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"github.com/agentledger/agentledger/agentledgertest/downstream"
)

// river-effects is the effects command's workload done the way a careful
// River user would without a ledger: a hand-written idempotency table
// beside River. For each keyed call of a job the worker
//
//  1. in a transaction inserts (key, 'started') into idem, ON CONFLICT DO
//     NOTHING, and reads the row: a completed row's stored answer is used
//     and nothing is sent; commits;
//  2. POSTs with Idempotency-Key: key, the key derived from the job's
//     business intent (its order and the call's step);
//  3. records the answer (state 'completed', status, body);
//
// then returns, and River completes the job in its batched completer
// (--complete batched), or records the last call's answer and completes the
// job in one transaction with JobCompleteTx (--complete tx).
//
// What each side guarantees: on a crash between the call and its record,
// both send the call again under the same key, and only a downstream that
// deduplicates by key keeps it to one business effect (the ledger's keyed
// class says the same). After the record, both serve the stored answer.
// With batched completion a crash after the record and before River's
// completion runs the job again; every call is then served from idem.

// RiverEffectsFlags configure the river-effects command.
type RiverEffectsFlags struct {
	CommonFlags
	Tasks             int
	InsertBatch       int
	Effects           intList
	Complete          string // batched or tx
	MaxWorkers        int
	MaxConns          int
	FetchCooldown     time.Duration
	FetchPollInterval time.Duration
	Repeat            int
}

// riverCharge is the job: an order whose calls are its steps.
type riverCharge struct {
	Order int `json:"order"`
	Steps int `json:"steps"`
}

// Kind names the job kind.
func (riverCharge) Kind() string { return "agentbench_charge" }

// idemTableSQL is the hand-written idempotency table.
const idemTableSQL = `CREATE TABLE IF NOT EXISTS idem (
	key text PRIMARY KEY,
	state text NOT NULL,
	status int,
	body bytea
)`

const (
	idemStartSQL  = `INSERT INTO idem (key, state) VALUES ($1, 'started') ON CONFLICT (key) DO NOTHING`
	idemReadSQL   = `SELECT state, coalesce(status, 0) FROM idem WHERE key = $1`
	idemRecordSQL = `UPDATE idem SET state = 'completed', status = $2, body = $3 WHERE key = $1`
)

// riverChargeWorker performs a job's keyed calls through idem.
type riverChargeWorker struct {
	river.WorkerDefaults[riverCharge]
	db       *pgxpool.Pool
	url      string
	client   *http.Client
	txFinish bool // complete the job in the last record's transaction
	count    *handledCounter
}

// Work performs the job's calls in order.
func (w *riverChargeWorker) Work(ctx context.Context, job *river.Job[riverCharge]) error {
	for step := range job.Args.Steps {
		key := fmt.Sprintf("order-%d/charge-%d", job.Args.Order, step)
		done, err := w.start(ctx, key)
		if err != nil {
			return err
		}
		last := step == job.Args.Steps-1
		if done {
			if last && w.txFinish {
				if err := w.complete(ctx, job); err != nil {
					return err
				}
			}
			continue
		}
		status, body, err := w.post(ctx, key, step)
		if err != nil {
			return err
		}
		if err := w.record(ctx, job, key, status, body, last && w.txFinish); err != nil {
			return err
		}
	}
	w.count.add(1)
	return nil
}

// start reserves key and says whether its answer is recorded already.
func (w *riverChargeWorker) start(ctx context.Context, key string) (done bool, err error) {
	err = pgx.BeginFunc(ctx, w.db, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, idemStartSQL, key); err != nil {
			return err
		}
		var state string
		var status int
		if err := tx.QueryRow(ctx, idemReadSQL, key).Scan(&state, &status); err != nil {
			return err
		}
		done = state == "completed"
		return nil
	})
	return done, err
}

// post sends the call with its key.
func (w *riverChargeWorker) post(ctx context.Context, key string, step int) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.url, strings.NewReader(fmt.Sprintf(`{"step":%d}`, step)))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", key)
	resp, err := w.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, nil, err
	}
	if resp.StatusCode >= 500 {
		return 0, nil, fmt.Errorf("downstream: HTTP %d", resp.StatusCode)
	}
	return resp.StatusCode, body, nil
}

// record stores the answer, and with finish completes the job in the same
// transaction.
func (w *riverChargeWorker) record(ctx context.Context, job *river.Job[riverCharge], key string, status int, body []byte, finish bool) error {
	if !finish {
		_, err := w.db.Exec(ctx, idemRecordSQL, key, status, body)
		return err
	}
	return pgx.BeginFunc(ctx, w.db, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, idemRecordSQL, key, status, body); err != nil {
			return err
		}
		_, err := river.JobCompleteTx[*riverpgxv5.Driver](ctx, tx, job)
		return err
	})
}

// complete completes the job in a transaction of its own (a job whose
// last call was recorded before).
func (w *riverChargeWorker) complete(ctx context.Context, job *river.Job[riverCharge]) error {
	return pgx.BeginFunc(ctx, w.db, func(tx pgx.Tx) error {
		_, err := river.JobCompleteTx[*riverpgxv5.Driver](ctx, tx, job)
		return err
	})
}

// RiverEffectsResult is one river-effects run.
type RiverEffectsResult struct {
	RiverResult
	Effects int
	Hits    int64
	Tx      TxDelta
}

func runRiverEffects(ctx context.Context, args []string, out, errOut io.Writer) error {
	f := RiverEffectsFlags{Effects: intList{1}}
	fs := newFlagSet("river-effects",
		"The effects command's workload with River and a hand-written idempotency table: each job makes N keyed POSTs "+
			"to the same loopback counting server, each reserved in the table before it is sent and recorded after; "+
			"River completes the job in its batched completer, or with --complete tx in the last record's transaction "+
			"(JobCompleteTx). Reports jobs/s, effects/s and CPU per job beside the effects command's.", errOut)
	f.register(fs)
	fs.IntVar(&f.Tasks, "tasks", 5000, "jobs inserted before each run")
	fs.IntVar(&f.InsertBatch, "insert-batch", 1000, "jobs per InsertMany call when inserting")
	fs.Var(&f.Effects, "effects", "comma-separated numbers of keyed calls per job to sweep")
	fs.StringVar(&f.Complete, "complete", "batched", "how a job is completed: batched (River's completer, after the worker returns) "+
		"or tx (JobCompleteTx in the last record's transaction)")
	fs.IntVar(&f.MaxWorkers, "max-workers", 100, "MaxWorkers of the queue (the effects command's --concurrency)")
	fs.IntVar(&f.MaxConns, "max-conns", 20, "connection pool size of the River client and the worker (the effects command's --max-conns)")
	fs.DurationVar(&f.FetchCooldown, "fetch-cooldown", 2*time.Millisecond, "River's FetchCooldown")
	fs.DurationVar(&f.FetchPollInterval, "fetch-poll-interval", 20*time.Millisecond, "River's FetchPollInterval")
	fs.IntVar(&f.Repeat, "repeat", 1, "run the whole sweep this many times")
	if err := parseFlags(fs, args, &f.CommonFlags); err != nil {
		return err
	}
	if f.Complete != "batched" && f.Complete != "tx" {
		return fmt.Errorf("--complete %q: give batched or tx", f.Complete)
	}
	if f.Tasks <= 0 || f.InsertBatch <= 0 || f.MaxWorkers <= 0 || f.MaxConns <= 0 || f.Repeat <= 0 {
		return errors.New("--tasks, --insert-batch, --max-workers, --max-conns and --repeat must be positive")
	}
	for _, n := range f.Effects {
		if n <= 0 {
			return fmt.Errorf("--effects %d: give at least 1", n)
		}
	}
	if f.FetchCooldown < river.FetchCooldownMin || f.FetchPollInterval < river.FetchPollIntervalMin {
		return errors.New("--fetch-cooldown and --fetch-poll-interval must be at least 1ms")
	}
	srv, log, err := f.open(ctx, errOut)
	if err != nil {
		return err
	}
	defer srv.Close()
	fmt.Fprintf(out, "# river-effects: %d jobs per run (River %s), keyed POSTs to a loopback counting server in this process "+
		"through a hand-written idempotency table, completion %s; MaxWorkers %d, %d connections; %s\n# %s, GOMAXPROCS=%d, %d CPUs\n\n",
		f.Tasks, riverVersion, f.Complete, f.MaxWorkers, f.MaxConns, srv.Describe(ctx), runtime.Version(), runtime.GOMAXPROCS(0), runtime.NumCPU())

	t := NewTable(append(append([]string{"effects", "complete", "jobs", "secs", "jobs/s", "effects/s", "hits", "attempts",
		"xacts/job", "writes/job"}, cpuHeader...), "rss MB", "conns")...)
	for range f.Repeat {
		for _, n := range f.Effects {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			r, err := riverEffectsRun(ctx, srv, f, n, log)
			if err != nil {
				return fmt.Errorf("river-effects run with %d effects: %w", n, err)
			}
			rate := fmt.Sprintf("%.0f", r.Rate)
			if r.TimedOut {
				rate = "timeout"
			}
			t.Add(append(append([]any{n, f.Complete, r.Tasks, fmt.Sprintf("%.2f", r.Elapsed.Seconds()), rate,
				fmt.Sprintf("%.0f", r.Rate*float64(n)), r.Hits, r.Attempts,
				fmt.Sprintf("%.2f", float64(r.Tx.Commits)/float64(r.Tasks)), fmt.Sprintf("%.2f", float64(r.Tx.Writes)/float64(r.Tasks))},
				r.CPU.cells(r.Tasks)...), mb(r.PeakRSS), r.Conns)...)
			fmt.Fprintf(errOut, "river-effects effects=%d complete=%s: %.0f jobs/s, %.0f effects/s\n", n, f.Complete, r.Rate, r.Rate*float64(n))
		}
	}
	t.Print(out)
	return nil
}

// riverEffectsRun measures one burn-down of jobs with n calls each on a
// fresh database, and checks that the downstream performed one business
// effect per call.
func riverEffectsRun(ctx context.Context, srv *Server, f RiverEffectsFlags, n int, log *slog.Logger) (RiverEffectsResult, error) {
	res := RiverEffectsResult{RiverResult: RiverResult{MaxWorkers: f.MaxWorkers, Tasks: f.Tasks}, Effects: n}
	ctx, cancel := context.WithTimeout(ctx, f.RunTimeout)
	defer cancel()

	rdb, err := srv.Fresh(ctx)
	if err != nil {
		return res, err
	}
	defer rdb.Close()
	meter, err := NewTxMeter(ctx, rdb)
	if err != nil {
		return res, err
	}
	defer meter.Close()
	ctl := meter.Pool()
	db, err := riverDB(ctx, srv, rdb, int32(f.MaxConns))
	if err != nil {
		return res, err
	}
	defer db.Close()
	if _, err := db.Exec(ctx, idemTableSQL); err != nil {
		return res, fmt.Errorf("the idempotency table: %w", err)
	}
	if srv.flags.Reset == "truncate" {
		if _, err := db.Exec(ctx, "TRUNCATE idem"); err != nil {
			return res, err
		}
	}

	down := downstream.New()
	defer down.Close()
	// One idle connection per running job, as the effects command keeps.
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.MaxIdleConnsPerHost = f.MaxWorkers
	transport.MaxIdleConns = 2 * f.MaxWorkers
	defer transport.CloseIdleConnections()
	u, _ := url.Parse(down.URL)
	u.Path = "/charges"

	count := newHandledCounter(f.Tasks)
	workers := river.NewWorkers()
	river.AddWorker(workers, &riverChargeWorker{db: db, url: u.String(), client: &http.Client{Transport: transport},
		txFinish: f.Complete == "tx", count: count})
	client, err := river.NewClient(riverpgxv5.New(db), &river.Config{
		FetchCooldown:     f.FetchCooldown,
		FetchPollInterval: f.FetchPollInterval,
		Logger:            log,
		Queues:            map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: f.MaxWorkers}},
		Workers:           workers,
	})
	if err != nil {
		return res, err
	}
	batch := make([]river.InsertManyParams, 0, f.InsertBatch)
	insStart := time.Now()
	for done := 0; done < f.Tasks; done += len(batch) {
		batch = batch[:0]
		for i := done; i < f.Tasks && len(batch) < f.InsertBatch; i++ {
			batch = append(batch, river.InsertManyParams{Args: riverCharge{Order: i, Steps: n}})
		}
		if _, err := client.InsertMany(ctx, batch); err != nil {
			return res, fmt.Errorf("inserting jobs: %w", err)
		}
	}
	res.InsertRate = float64(f.Tasks) / time.Since(insStart).Seconds()
	if err := rdb.Settle(ctx, ctl, "river_job"); err != nil {
		return res, err
	}
	db.Reset() // the client starts from no connection, as the pools do
	resetPeakRSS()

	before, err := meter.Read(ctx)
	if err != nil {
		return res, err
	}
	// Completed in the worker's own transaction (tx), a job's end is
	// written when Work returns; otherwise River's completer writes it
	// after, and its events say when, as for the no-op burn-down.
	ends := count
	if f.Complete != "tx" {
		var unsubscribe func()
		ends, unsubscribe = countRiverEnds(client, f.Tasks)
		defer unsubscribe()
	}
	if err := burnRiver(ctx, ctl, client, ends, f.CommonFlags, fmt.Sprintf("river-effects-%s-e%d", f.Complete, n), &res.RiverResult); err != nil {
		return res, err
	}
	res.Hits = down.Hits()
	db.Close()
	readCtx, cancelRead := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancelRead()
	waitDisconnected(readCtx, ctl) // the client's statistics are flushed before the reading
	after, err := meter.Read(readCtx)
	if err != nil {
		return res, err
	}
	res.Tx = after.Sub(before)
	if got, want := down.Effects(), int64(f.Tasks*n); !res.TimedOut && got != want {
		return res, fmt.Errorf("the downstream performed %d business effects, want %d", got, want)
	}
	return res, nil
}
