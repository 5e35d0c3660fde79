package waits_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentledger/agentledger/waits"
)

// A signal and its wait in flight at once, each order forced: the test
// holds the lock of (tenant, name, key) while the first and then the
// second queue behind it, and lets go. Whichever commits second finds the
// first: the signal is consumed by the wait either way.
func TestSignalDuringItsWait(t *testing.T) {
	t.Parallel()
	for _, sendFirst := range []bool{true, false} {
		ctx := context.Background()
		db := pool(t, 6)
		s := waits.NewStore(db)
		task := newTask(t, db)
		park(t, db, task.ID)

		release := holdSignalLock(t, db, "acme", "payment.settled", "order-5")
		sent, awaited := make(chan waits.Sent, 1), make(chan waits.Wait, 1)
		doSend := func() {
			go func() {
				got, err := s.Send(ctx, waits.SignalParams{Tenant: "acme", Name: "payment.settled", Key: "order-5",
					Payload: json.RawMessage(`{"amount": 5}`), SentBy: "test"})
				if err != nil {
					t.Error(err)
				}
				sent <- got
			}()
		}
		doAwait := func() {
			go func() {
				got, err := s.Await(ctx, signalWait(task, "tool/0", "payment.settled", "order-5"), nil, time.Hour)
				if err != nil {
					t.Error(err)
				}
				awaited <- got
			}()
		}
		if sendFirst {
			doSend()
			queued(t, db, 1)
			doAwait()
		} else {
			doAwait()
			queued(t, db, 1)
			doSend()
		}
		queued(t, db, 2)
		release()
		sig, w := <-sent, <-awaited
		got, err := s.Get(ctx, "", w.ID)
		if err != nil {
			t.Fatal(err)
		}
		st, by := signalState(t, db, sig.Signal.ID)
		if got.State != waits.Done || got.SignalID == nil || *got.SignalID != sig.Signal.ID || st != "consumed" || by != w.ID {
			t.Fatalf("send first %v: the wait %+v, the signal %s by wait %d; want the wait done with the signal", sendFirst, got, st, by)
		}
		// Who consumed it: the second to come.
		if sendFirst != (w.State == waits.Done) || sendFirst != (sig.Woke == nil) {
			t.Fatalf("send first %v: Await returned %s, Send woke %+v", sendFirst, w.State, sig.Woke)
		}
	}
}

// holdSignalLock takes the lock a signal and its waits meet under, on a
// connection of its own, until release.
func holdSignalLock(t *testing.T, db *pgxpool.Pool, tenant, name, key string) (release func()) {
	t.Helper()
	ctx := context.Background()
	conn, err := db.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock(hashtextextended($1 || chr(31) || $2 || chr(31) || $3, 36))`,
		tenant, name, key); err != nil {
		conn.Release()
		t.Fatal(err)
	}
	return func() {
		defer conn.Release()
		if _, err := conn.Exec(ctx, `SELECT pg_advisory_unlock_all()`); err != nil {
			t.Fatal(err)
		}
	}
}

// queued waits until n transactions wait for an advisory lock: a state of
// the server, polled as there is no signal to await.
func queued(t *testing.T, db waits.DB, n int) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		var got int
		if err := db.QueryRow(context.Background(), `SELECT count(*) FROM pg_locks
			WHERE locktype = 'advisory' AND NOT granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d waiting for the signal's lock, want %d", got, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
