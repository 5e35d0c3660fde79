package worker

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/internal/test/testdb"
)

// cutDB loses the answer to the next success statement, as a failover
// does: after the commit (commit) or before it, and with meanwhile (if
// set) run first.
type cutDB struct {
	*pgxpool.Pool
	cuts      atomic.Int32
	commit    bool
	meanwhile func()
}

func (d *cutDB) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	if !strings.Contains(sql, "claims.succeed") || d.cuts.Add(-1) < 0 {
		return d.Pool.Query(ctx, sql, args...)
	}
	if d.commit {
		rows, err := d.Pool.Query(ctx, sql, args...)
		if err == nil {
			for rows.Next() {
			}
			rows.Close()
			err = rows.Err()
		}
		if err != nil {
			return nil, err
		}
	}
	if d.meanwhile != nil {
		d.meanwhile()
	}
	return nil, fmt.Errorf("reading the answer: %w", io.ErrUnexpectedEOF)
}

// A success whose commit went unanswered is read back, not guessed: one
// that committed is reported succeeded, one that did not is sent again
// (fenced) and succeeds, and one whose lease another hand ended meanwhile
// is reported lost.
func TestCompleterReadsBackAnUnansweredWrite(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		commit   bool
		released bool
		want     agentledger.TaskState
		outcome  agentledger.AttemptOutcome
	}{
		{"committed", true, false, agentledger.StateSucceeded, agentledger.OutcomeSucceeded},
		{"not committed", false, false, agentledger.StateSucceeded, agentledger.OutcomeSucceeded},
		{"not committed, lease ended meanwhile", false, true, "", agentledger.OutcomeReleased},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db := testdb.New(t)
			s := claims.New(db)
			if _, err := s.Enqueue(ctx, claims.EnqueueParams{Kind: "noop"}); err != nil {
				t.Fatal(err)
			}
			tasks, err := s.Claim(ctx, claims.ClaimParams{Queue: claims.DefaultQueue, Worker: "w1", Limit: 1, Lease: time.Minute})
			if err != nil || len(tasks) != 1 {
				t.Fatalf("claim: %v %v", tasks, err)
			}
			lease := claims.LeaseOf(tasks[0])
			cut := &cutDB{Pool: db, commit: tc.commit}
			cut.cuts.Store(1)
			if tc.released {
				cut.meanwhile = func() {
					if _, err := s.ReleaseMany(ctx, []agentledger.Lease{lease}); err != nil {
						t.Error(err)
					}
				}
			}
			c := newCompleter(claims.New(cut), 0, slog.New(slog.NewTextHandler(io.Discard, nil)))
			runCtx, cancel := context.WithCancel(ctx)
			defer cancel()
			go c.run(runCtx)

			r := c.complete(ctx, &completion{success: &claims.Success{Lease: lease}}, func() {})
			if r.err != nil || r.state != tc.want {
				t.Fatalf("completion: state %q, err %v; want %q", r.state, r.err, tc.want)
			}
			attempts, err := s.Attempts(ctx, lease.TaskID)
			if err != nil || len(attempts) != 1 || attempts[0].Outcome != tc.outcome {
				t.Fatalf("attempts %+v %v: want one, %s", attempts, err, tc.outcome)
			}
		})
	}
}
