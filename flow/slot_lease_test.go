package flow_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/flow"
	"github.com/agentledger/agentledger/internal/test/testdb"
)

// slotHolderEnv makes the test binary another daemon that takes every
// slot of a target and holds them until killed: "url|target|cap|lease".
const slotHolderEnv = "FLOW_TEST_SLOT_HOLDER"

// holdSlots is that daemon: its calls would take an hour, it prints "held"
// once it has every slot, and it never ends a pass.
func holdSlots(spec string) {
	parts := strings.Split(spec, "|")
	n, _ := strconv.Atoi(parts[2])
	lease, _ := time.ParseDuration(parts[3])
	ctx := context.Background()
	db, err := pgxpool.New(ctx, parts[0])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	l := flow.NewLimiter(db, nil)
	l.LeaseSlotsFor(lease)
	for range n {
		if _, err := l.Admit(ctx, parts[1], time.Hour); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
	}
	fmt.Println("held")
	select {}
}

// A daemon holding every slot of a target for calls that would take an
// hour keeps them while it lives (its renewals outlast several leases)
// and, SIGKILLed, gives them back within a lease: the other daemons call
// again in seconds, not after the calls' timeout.
func TestSlotsOfAKilledDaemonComeBackWithinTheLease(t *testing.T) {
	t.Parallel()
	url := testdb.URL(t)
	db := testdb.Open(t, url)
	const target, slots, lease = "http:https://slow.internal:8443", 3, time.Second
	put(t, flow.NewStore(db), flow.Limit{Target: target, Concurrency: slots})

	holder := exec.Command(os.Args[0], "-test.run=^$")
	holder.Env = append(os.Environ(), fmt.Sprintf("%s=%s|%s|%d|%s", slotHolderEnv, url, target, slots, lease))
	holder.Stderr = os.Stderr
	out, err := holder.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = holder.Process.Kill(); _ = holder.Wait() })
	if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || line != "held\n" {
		t.Fatalf("the holder: %q %v", line, err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// Two leases past the last acquisition, every slot is still held:
	// renewed, not merely leased long.
	var acquired time.Time
	if err := db.QueryRow(ctx, `SELECT max(expires_at) - $2::interval FROM flow_slots WHERE target = $1`,
		target, lease).Scan(&acquired); err != nil {
		t.Fatal(err)
	}
	waitForDBClock(t, ctx, db, acquired.Add(2*lease))
	other := flow.NewLimiter(db, nil)
	_, err = other.Admit(ctx, target, time.Minute)
	var d *agentledger.DeferredError
	if !errors.As(err, &d) {
		t.Fatalf("two leases on, a live holder's slots were free: %v", err)
	}
	var held int
	if err := db.QueryRow(ctx, `SELECT count(*) FROM flow_slots WHERE target = $1 AND expires_at > now()`, target).Scan(&held); err != nil || held != slots {
		t.Fatalf("slots held %d, want %d (%v)", held, slots, err)
	}

	if err := holder.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = holder.Wait()
	killed := time.Now()
	// Without renewals the slots were leased for the calls' hour: the
	// context's minute runs out first.
	var passes []*flow.Pass
	for range slots {
		p, err := admitOrWait(ctx, other, target)
		if err != nil {
			t.Fatalf("after the holder was killed: %v", err)
		}
		passes = append(passes, p)
	}
	t.Logf("all %d slots back %s after the kill (lease %s)", slots, time.Since(killed).Round(10*time.Millisecond), lease)
	for _, p := range passes {
		p.Succeeded()
	}
}

// waitForDBClock waits until the database's clock passes at.
func waitForDBClock(t *testing.T, ctx context.Context, db *pgxpool.Pool, at time.Time) {
	t.Helper()
	for {
		var secs float64
		if err := db.QueryRow(ctx, `SELECT greatest(extract(epoch FROM $1::timestamptz - clock_timestamp()), 0)::float8`, at).Scan(&secs); err != nil {
			t.Fatal(err)
		}
		if secs == 0 {
			return
		}
		left := time.Duration(secs * float64(time.Second))
		select {
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		case <-time.After(left):
		}
	}
}
