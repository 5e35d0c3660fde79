package waits_test

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/internal/test/testdb"
	"github.com/agentledger/agentledger/waits"
)

// pool opens a pool of up to conns connections to a new database, so that
// concurrent calls run on as many connections as they can.
func pool(t *testing.T, conns int) *pgxpool.Pool {
	t.Helper()
	url := testdb.URL(t)
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	return testdb.Open(t, url+sep+"pool_max_conns="+strconv.Itoa(conns))
}

// newTask queues a task of tenant acme and returns it.
func newTask(t *testing.T, db waits.DB) *agentledger.Task {
	t.Helper()
	ctx := context.Background()
	r, err := claims.New(db).Enqueue(ctx, claims.EnqueueParams{Kind: "steps", Tenant: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	return r.Task
}

// park puts task id in the state a waiting call leaves it: waiting, with no
// lease, due at its wait's deadline (an hour away here).
func park(t *testing.T, db waits.DB, id int64) {
	t.Helper()
	if _, err := db.Exec(context.Background(), `UPDATE tasks SET state = 'waiting', run_at = now() + interval '1 hour',
		wait_reason = 'waiting for a signal' WHERE id = $1`, id); err != nil {
		t.Fatal(err)
	}
}

// signalWait is task's wait at step for signal name, key.
func signalWait(task *agentledger.Task, step, name, key string) waits.Wait {
	return waits.Wait{TaskID: task.ID, Generation: task.Generation, Step: step, Tenant: task.Tenant,
		Kind: waits.KindSignal, Signal: name, Key: key}
}

// await records w (timeout an hour) and brings it as far as it goes.
func await(t *testing.T, s *waits.Store, w waits.Wait) waits.Wait {
	t.Helper()
	got, err := s.Await(context.Background(), w, nil, time.Hour)
	if err != nil {
		t.Fatalf("await %s: %v", w.Step, err)
	}
	return got
}

// send sends signal name, key with payload from tenant acme.
func send(t *testing.T, s *waits.Store, name, key, payload string) waits.Sent {
	t.Helper()
	sent, err := s.Send(context.Background(), waits.SignalParams{Tenant: "acme", Name: name, Key: key,
		Payload: json.RawMessage(payload), SentBy: "test"})
	if err != nil {
		t.Fatalf("send %s %s: %v", name, key, err)
	}
	return sent
}

// signalState is signal id's state and the wait that consumed it (0: none).
func signalState(t *testing.T, db waits.DB, id int64) (state string, wait int64) {
	t.Helper()
	if err := db.QueryRow(context.Background(), `SELECT state, coalesce(wait_id, 0) FROM signals WHERE id = $1`, id).
		Scan(&state, &wait); err != nil {
		t.Fatal(err)
	}
	return state, wait
}

// rows counts table's rows.
func rows(t *testing.T, db waits.DB, table string) int {
	t.Helper()
	var n int
	if err := db.QueryRow(context.Background(), `SELECT count(*) FROM `+table).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// invalid fails t unless err is an *agentledger.InvalidError naming field.
func invalid(t *testing.T, what string, err error, field string) {
	t.Helper()
	var inv *agentledger.InvalidError
	if !errors.As(err, &inv) || inv.Field != field {
		t.Errorf("%s: %v; want an invalid %s", what, err, field)
	}
}
