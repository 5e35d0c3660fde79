package main

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"
)

// tunedAutovacuum are the storage parameters --autovacuum tuned sets on the
// queue's churning tables, what a deployment whose autovacuum falls behind
// would set: vacuum after 2% of a table is dead rather than PostgreSQL's
// 20% (a tasks table of 100,000 live rows is otherwise left with 20,000
// dead ones, and every claim steps over them), and ten times the cost
// budget per round, so one vacuum of a hot table ends before the next
// minute's dead rows arrive.
const tunedAutovacuum = "autovacuum_vacuum_scale_factor = 0.02, autovacuum_vacuum_threshold = 1000, " +
	"autovacuum_analyze_scale_factor = 0.05, autovacuum_vacuum_cost_limit = 2000"

// tuneAutovacuum sets tunedAutovacuum on the tables of the run's database.
func tuneAutovacuum(ctx context.Context, pool *pgxpool.Pool) error {
	for _, t := range []string{"tasks", "task_attempts", "ledger", "outbox"} {
		if _, err := pool.Exec(ctx, "ALTER TABLE "+ident(t)+" SET ("+tunedAutovacuum+")"); err != nil {
			return fmt.Errorf("--autovacuum tuned: %s: %w", t, err)
		}
	}
	return nil
}
