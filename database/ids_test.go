package database_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentledger/agentledger/database"
	"github.com/agentledger/agentledger/internal/test/testdb"
)

const billion = 1_000_000_000

// A database whose recorded server is not the one it is on now — as after
// a promotion (another timeline) or a dump restored elsewhere (another
// system identifier) — has its ids advanced by the first connection
// opened to it, once however many open at once, before anything inserts;
// a database on the server it recorded keeps its ids.
func TestIdsAdvanceOnAnotherServer(t *testing.T) {
	t.Parallel()
	for _, moved := range []string{"timeline", "system_identifier"} {
		t.Run(moved, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			url := testdb.URL(t)
			admin := testdb.Open(t, url)
			var first int64
			if err := admin.QueryRow(ctx, `INSERT INTO tasks (kind) VALUES ('k') RETURNING id`).Scan(&first); err != nil {
				t.Fatal(err)
			}

			// The same server: nothing moves.
			var logs bytes.Buffer
			log := slog.New(slog.NewTextHandler(&logs, nil))
			db, err := database.Open(ctx, database.Config{URL: url, Logger: log})
			if err != nil {
				t.Fatal(err)
			}
			var id int64
			if err := db.Pool.QueryRow(ctx, `INSERT INTO tasks (kind) VALUES ('k') RETURNING id`).Scan(&id); err != nil {
				t.Fatal(err)
			}
			db.Close(ctx)
			if id != first+1 {
				t.Fatalf("on the recorded server the next id is %d, want %d", id, first+1)
			}

			// Another server: the first connection advances the ids.
			if _, err := admin.Exec(ctx, `UPDATE database_identity SET `+moved+` = `+moved+` - 1`); err != nil {
				t.Fatal(err)
			}
			db, err = database.Open(ctx, database.Config{URL: url, Logger: log})
			if err != nil {
				t.Fatal(err)
			}
			err = db.Pool.QueryRow(ctx, `INSERT INTO tasks (kind) VALUES ('k') RETURNING id`).Scan(&id)
			db.Close(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if id != billion {
				t.Errorf("the first task inserted after the move got id %d, want %d", id, billion)
			}
			if n := strings.Count(logs.String(), "ids advanced"); n != 1 {
				t.Errorf("want one warning that the ids advanced, got %d:\n%s", n, logs.String())
			}

			// Again, with eight connections checking at once: one advances.
			if _, err := admin.Exec(ctx, `UPDATE database_identity SET `+moved+` = `+moved+` - 1`); err != nil {
				t.Fatal(err)
			}
			conns := make([]*pgx.Conn, 8)
			for i := range conns {
				if conns[i], err = pgx.Connect(ctx, url); err != nil {
					t.Fatal(err)
				}
				defer conns[i].Close(ctx)
			}
			var wg sync.WaitGroup
			start := make(chan struct{})
			nexts := make([]*int64, len(conns))
			for i, c := range conns {
				wg.Go(func() {
					<-start
					if err := c.QueryRow(ctx, `SELECT agentledger_guard_ids()`).Scan(&nexts[i]); err != nil {
						t.Error(err)
					}
				})
			}
			close(start)
			wg.Wait()
			advanced := 0
			for _, n := range nexts {
				if n != nil {
					advanced++
					if *n != 2*billion {
						t.Errorf("the check that advanced said the next task id is %d, want %d", *n, 2*billion)
					}
				}
			}
			if advanced != 1 {
				t.Errorf("%d of %d checks at once advanced the ids, want 1", advanced, len(conns))
			}

			// Every id sequence of the schema moved, not only the tasks'
			// (a sequence's own last_value is its next value after setval
			// with is_called false; pg_sequences shows NULL for it).
			var names []string
			if err := sequences(ctx, admin, &names); err != nil {
				t.Fatal(err)
			}
			for _, name := range names {
				var last int64
				if err := admin.QueryRow(ctx, `SELECT last_value FROM `+pgx.Identifier{name}.Sanitize()).Scan(&last); err != nil {
					t.Fatal(err)
				}
				if last < 2*billion {
					t.Errorf("sequence %s is at %d after two moves, want %d or more", name, last, 2*billion)
				}
			}
			if len(names) != 8 {
				t.Errorf("%d id sequences (%v), want the 8 the schema has: a new one needs a line in agentledger_advance_ids", len(names), names)
			}
		})
	}
}

// sequences lists the schema's sequences but goose's own.
func sequences(ctx context.Context, db *pgxpool.Pool, names *[]string) error {
	rows, err := db.Query(ctx, `SELECT sequencename FROM pg_sequences
		WHERE schemaname = current_schema() AND sequencename <> 'agentledger_migrations_id_seq' ORDER BY 1`)
	if err != nil {
		return err
	}
	*names, err = pgx.CollectRows(rows, pgx.RowTo[string])
	return err
}

// A database not yet migrated to the record of its server opens as before
// (agentctl migrate up and a daemon about to migrate connect to it).
func TestAnUnmigratedDatabaseOpens(t *testing.T) {
	t.Parallel()
	db, err := database.Open(context.Background(), database.Config{URL: testdb.Empty(t)})
	if err != nil {
		t.Fatalf("Open of an unmigrated database: %v", err)
	}
	db.Close(context.Background())
}

// AdvanceIDs moves the ids on by hand (for a restore that keeps the
// server's identity) and says the next task id.
func TestAdvanceIDs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.New(t)
	next, err := database.AdvanceIDs(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	var id int64
	if err := pool.QueryRow(ctx, `INSERT INTO tasks (kind) VALUES ('k') RETURNING id`).Scan(&id); err != nil {
		t.Fatal(err)
	}
	if next != billion || id != next {
		t.Errorf("AdvanceIDs said %d and the next task got %d, want both %d", next, id, billion)
	}
	if next, err = database.AdvanceIDs(ctx, pool); err != nil || next != 2*billion {
		t.Errorf("a second AdvanceIDs said %d, %v, want %d", next, err, 2*billion)
	}
}
