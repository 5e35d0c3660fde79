package ledger

import (
	"context"
	"errors"
	"reflect"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentledger/agentledger/dbaway"
)

// Keyed effects' records, several attempts' in one statement.
//
// A keyed effect's record is a fenced INSERT … ON CONFLICT DO NOTHING that
// need not be durable before Do returns (a lost record is recovered by
// sending the call again under its key). Written one statement and one
// commit per call, it was the largest part of an effect's server time: the
// statement's start-up, the commit and the round trip cost more than the
// row. The records of attempts that perform at the same time are written
// together instead, as a group commit: a recorder sends what has queued
// while its previous statement ran, so a lone call waits for nothing and a
// busy pool writes tens of records a statement. Each row is fenced on its
// own attempt's lease, as the single statement was, and a row the fence or
// a row that landed first refuses is answered as before (Ledger.landed).

// maxBatch bounds the records one statement writes.
const maxBatch = 256

// maxRecorders is how many statements of one fence kind may be in flight
// at once: the next gathers while one runs, without one call's round trip
// holding up every other.
const maxRecorders = 2

// recordReq is one keyed record waiting for its statement.
type recordReq struct {
	ctx  context.Context
	args keyedRecord
	done chan recordAns // buffered: the recorder never waits for its caller
}

// keyedRecord is one row of insertKeyedOutcomes.
type keyedRecord struct {
	tenant, operation, key string
	hash                   []byte
	class                  string
	taskID                 int64
	generation             int32
	step                   string
	token                  int64
	state                  string
	result                 []byte
	externalRef, err       string
	fenceID                int64
}

// recordAns is a record's answer: the result as stored, or landed false
// when the statement inserted no row for it (its lease was lost, or
// another performance's row landed first).
type recordAns struct {
	result      []byte
	externalRef string
	landed      bool
	err         error
}

// recorder writes the keyed records of one fence kind: one alone with
// the single-row statement (a lone call pays nothing for the batch's
// arrays), several with the batch's.
type recorder struct {
	db        DB
	one, many string

	mu      sync.Mutex
	queue   []*recordReq
	running int
}

// recorderFor returns the ledger's recorder for fence kind f.
func (l *Ledger) recorderFor(f Fence) *recorder {
	key := reflect.TypeOf(f)
	if r, ok := l.recorders.Load(key); ok {
		return r.(*recorder)
	}
	q := queriesOf(f)
	r, _ := l.recorders.LoadOrStore(key, &recorder{db: l.db, one: q.insertKeyedOutcome, many: q.insertKeyedOutcomes})
	return r.(*recorder)
}

// record queues rec and waits for its statement, or for ctx.
func (r *recorder) record(ctx context.Context, rec keyedRecord) recordAns {
	req := &recordReq{ctx: ctx, args: rec, done: make(chan recordAns, 1)}
	r.mu.Lock()
	r.queue = append(r.queue, req)
	if r.running < maxRecorders {
		r.running++
		go r.run()
	}
	r.mu.Unlock()
	select {
	case ans := <-req.done:
		return ans
	case <-ctx.Done():
		return recordAns{err: ctx.Err()}
	}
}

// run writes what has queued, statement after statement, until nothing
// has.
func (r *recorder) run() {
	for {
		r.mu.Lock()
		batch := r.queue
		if len(batch) > maxBatch {
			batch = batch[:maxBatch:maxBatch]
		}
		r.queue = r.queue[len(batch):]
		if len(batch) == 0 {
			r.queue = nil
			r.running--
			r.mu.Unlock()
			return
		}
		r.mu.Unlock()
		r.write(batch)
	}
}

// write sends one statement for batch and answers each request.
func (r *recorder) write(batch []*recordReq) {
	ctx, cancel := batchContext(batch)
	defer cancel()
	if len(batch) == 1 {
		batch[0].done <- r.writeOne(ctx, batch[0].args)
		return
	}
	n := len(batch)
	var (
		tenants, ops, keys, classes, steps, states = make([]string, n), make([]string, n), make([]string, n),
			make([]string, n), make([]string, n), make([]string, n)
		hashes                 = make([][]byte, n)
		taskIDs, tokens, fence = make([]int64, n), make([]int64, n), make([]int64, n)
		gens                   = make([]int32, n)
		results, refs, errs    = make([]*string, n), make([]string, n), make([]string, n)
	)
	for i, q := range batch {
		a := q.args
		tenants[i], ops[i], keys[i], hashes[i], classes[i] = a.tenant, a.operation, a.key, a.hash, a.class
		taskIDs[i], gens[i], steps[i], tokens[i], states[i] = a.taskID, a.generation, a.step, a.token, a.state
		if a.result != nil {
			s := string(a.result)
			results[i] = &s
		}
		refs[i], errs[i], fence[i] = a.externalRef, a.err, a.fenceID
	}
	type stored struct {
		result []byte
		ref    string
	}
	got := make(map[[3]string]stored, n)
	err := again(ctx, func() error {
		clear(got)
		rows, err := r.db.Query(ctx, r.many, tenants, ops, keys, hashes, classes, taskIDs, gens, steps, tokens,
			states, results, refs, errs, fence)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var k [3]string
			var s stored
			if err := rows.Scan(&k[0], &k[1], &k[2], &s.result, &s.ref); err != nil {
				return err
			}
			got[k] = s
		}
		return rows.Err()
	})
	if err != nil && ctx.Err() == nil && !dbaway.Unavailable(err) {
		// The statement wrote nothing: one row the database refuses must
		// not fail the others, so each is written alone, and only its
		// own caller hears of it.
		for _, q := range batch {
			q.done <- r.writeOne(ctx, q.args)
		}
		return
	}
	for _, q := range batch {
		if err != nil {
			q.done <- recordAns{err: err}
			continue
		}
		s, ok := got[[3]string{q.args.tenant, q.args.operation, q.args.key}]
		q.done <- recordAns{result: s.result, externalRef: s.ref, landed: ok}
	}
}

// writeOne writes a record that queued alone.
func (r *recorder) writeOne(ctx context.Context, a keyedRecord) recordAns {
	var ans recordAns
	err := again(ctx, func() error {
		return r.db.QueryRow(ctx, r.one, a.tenant, a.operation, a.key, a.hash, a.class, a.taskID, a.generation, a.step,
			a.token, a.state, a.result, a.externalRef, a.err, a.fenceID).Scan(&ans.result, &ans.externalRef)
	})
	switch {
	case err == nil:
		ans.landed = true
	case !errors.Is(err, pgx.ErrNoRows):
		ans.err = err
	}
	return ans
}

// batchContext is the context a batch's statement runs under: the values
// of its first request's (a trace), ended when the last of its callers'
// deadlines passes, so a blip of the database is ridden out (again) while
// anyone still waits, and never longer.
func batchContext(batch []*recordReq) (context.Context, context.CancelFunc) {
	var last time.Time
	for _, q := range batch {
		d, ok := q.ctx.Deadline()
		if !ok {
			last = time.Time{}
			break
		}
		if d.After(last) {
			last = d
		}
	}
	ctx := context.WithoutCancel(batch[0].ctx)
	if last.IsZero() {
		return context.WithTimeout(ctx, time.Minute)
	}
	return context.WithDeadline(ctx, last)
}
