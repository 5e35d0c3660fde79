package steps_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/agentledger/agentledger/agentledgertest/downstream"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/internal/test/testdb"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/steps"
	"github.com/agentledger/agentledger/tools"
	"github.com/agentledger/agentledger/worker"
)

// BenchmarkStepsTasks measures end-to-end throughput of steps tasks with 0
// (the noop kind), 1 and 3 keyed effects against a local downstream, through
// one worker pool: the ledger's cost per effect. Reports tasks/s and
// effects/s; b.N is the number of tasks.
func BenchmarkStepsTasks(b *testing.B) {
	for _, effects := range []int{0, 1, 3} {
		b.Run(fmt.Sprintf("effects=%d", effects), func(b *testing.B) {
			ctx := context.Background()
			db := testdb.New(b)
			down := downstream.New()
			defer down.Close()
			s := claims.New(db)
			reg := tools.NewRegistry(&post{url: down.URL})
			kind, payload := "noop", `{}`
			if effects > 0 {
				var st []string
				for i := range effects {
					st = append(st, fmt.Sprintf(`{"tool":"post","args":{"i":%d}}`, i))
				}
				kind, payload = "steps", `{"steps":[`+strings.Join(st, ",")+`]}`
			}
			batch := make([]claims.EnqueueParams, b.N)
			for i := range batch {
				batch[i] = claims.EnqueueParams{Kind: kind, Payload: json.RawMessage(payload)}
			}
			for i := 0; i < len(batch); i += 1000 {
				if _, err := s.EnqueueBatch(ctx, batch[i:min(i+1000, len(batch))]); err != nil {
					b.Fatal(err)
				}
			}
			p, err := worker.New(db, worker.Config{Concurrency: 50, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
				Handlers: map[string]worker.Handler{
					"steps": steps.New(ledger.New(db), reg),
					"noop":  worker.HandlerFunc(tools.Noop),
				}})
			if err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			start := time.Now()
			runCtx, stop := context.WithCancel(ctx)
			done := make(chan struct{})
			go func() { p.Run(runCtx); close(done) }()
			for {
				var left int
				if err := db.QueryRow(ctx, `SELECT count(*) FROM tasks WHERE state <> 'succeeded'`).Scan(&left); err != nil {
					b.Fatal(err)
				}
				if left == 0 {
					break
				}
				time.Sleep(5 * time.Millisecond) // polling for the end of the run
			}
			elapsed := time.Since(start)
			b.StopTimer()
			stop()
			<-done
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "tasks/s")
			if effects > 0 {
				b.ReportMetric(float64(b.N*effects)/elapsed.Seconds(), "effects/s")
				if down.Effects() != int64(b.N*effects) {
					b.Fatalf("%d business effects, want %d", down.Effects(), b.N*effects)
				}
			}
		})
	}
}
