package ledger_test

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentledger/agentledger/ledger"
)

// lossyDB loses the answer to the next outcome write (ledger.insertOutcome,
// ledger.insertKeyedOutcome, ledger.insertKeyedOutcomes or ledger.record), as a failover does: after its commit (commit) or
// before it.
type lossyDB struct {
	*pgxpool.Pool
	cuts      atomic.Int32
	commit    bool
	batchOnly bool // cut only a statement of several keyed records
}

type lostAnswer struct{ row pgx.Row }

func (r lostAnswer) Scan(dst ...any) error {
	if r.row != nil {
		if err := r.row.Scan(dst...); err != nil {
			return err
		}
	}
	return fmt.Errorf("reading the answer: %w", io.ErrUnexpectedEOF)
}

func (d *lossyDB) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	outcome := strings.Contains(sql, "ledger.insertOutcome") || strings.Contains(sql, "ledger.insertKeyedOutcome") ||
		strings.Contains(sql, "ledger.record")
	if !outcome || d.batchOnly || d.cuts.Add(-1) < 0 {
		return d.Pool.QueryRow(ctx, sql, args...)
	}
	if d.commit {
		return lostAnswer{d.Pool.QueryRow(ctx, sql, args...)}
	}
	return lostAnswer{}
}

func (d *lossyDB) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	if !strings.Contains(sql, "ledger.insertKeyedOutcomes") || d.cuts.Add(-1) < 0 {
		return d.Pool.Query(ctx, sql, args...)
	}
	if d.commit {
		rows, err := d.Pool.Query(ctx, sql, args...)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	return nil, fmt.Errorf("reading the answer: %w", io.ErrUnexpectedEOF)
}

// A performed effect whose outcome's write went unanswered (a failover
// between the effect and its record) is written again, fenced, until it is
// answered: the outcome is recorded once and the effect is not left of
// unknown outcome — an unsafe one would otherwise park its task.
func TestOutcomeWriteAnsweredAfterAFailover(t *testing.T) {
	t.Parallel()
	for _, class := range []ledger.Class{ledger.Keyed, ledger.Unsafe} {
		for _, commit := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/committed=%v", class, commit), func(t *testing.T) {
				t.Parallel()
				ctx := context.Background()
				e := newEnv(t)
				e.task()
				a, _ := e.claim("w")
				db := &lossyDB{Pool: e.DB, commit: commit}
				db.cuts.Store(1)
				c := &counter{}
				res, err := ledger.New(db).Do(ctx, a, effect(class, "tool/0", `{"to":"acme"}`, c.perform))
				if err != nil || string(res.Body) != `{"n": 1}` {
					t.Fatalf("Do: %+v %v", res, err)
				}
				if db.cuts.Load() > 0 {
					t.Fatal("no outcome write lost its answer: the test did not test")
				}
				j, err := e.Ledger.Journal(ctx, a.TaskID, a.Generation)
				if err != nil || len(j) != 1 || j[0].State != ledger.StateCompleted || c.calls.Load() != 1 {
					t.Fatalf("journal %+v %v, performed %d times: want one completed effect, performed once", j, err, c.calls.Load())
				}
			})
		}
	}
}
