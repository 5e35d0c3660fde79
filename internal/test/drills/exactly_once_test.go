package drills_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/agentledger/agentledger/agentledgertest/downstream"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/internal/test/testdb"
)

// Drill 9: 200 steps tasks — each a keyed POST, a child task (local) and a
// second POST that uses the first one's result — worked by three worker
// processes that are killed with SIGKILL at random points and restarted.
// Every intended effect reaches the downstream exactly once as a business
// effect, and every parent makes exactly one child. DRILL_SEED reproduces a
// run; DRILL_TASKS changes the size.
func TestExactlyOnceUnderRandomKills(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	seed := envInt("DRILL_SEED", time.Now().UnixNano())
	n := int(envInt("DRILL_TASKS", 200))
	t.Logf("seed %d (DRILL_SEED=%d reproduces the kill schedule), %d tasks", seed, seed, n)
	rng := rand.New(rand.NewPCG(uint64(seed), 0))

	url := testdb.URL(t)
	db := testdb.Open(t, url)
	s := claims.New(db)
	down := downstream.New()
	defer down.Close()

	batch := make([]claims.EnqueueParams, n)
	for i := range batch {
		batch[i] = claims.EnqueueParams{Kind: "steps", MaxAttempts: 100, Payload: json.RawMessage(fmt.Sprintf(`{"steps":[
			{"tool":"post","args":{"order":%d,"op":"charge"}},
			{"tool":"child","args":{"order":%d,"charge":"${steps.0.body.id}"}},
			{"tool":"post","args":{"order":%d,"op":"receipt","charge":"${steps.0.body.id}"}}]}`, i, i, i))}
	}
	if _, err := s.EnqueueBatch(ctx, batch); err != nil {
		t.Fatal(err)
	}

	workers := make([]*exec.Cmd, 3)
	start := func(i int) {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), workerEnv+"="+url, downstreamEnv+"="+down.URL, fmt.Sprintf("%s=w%d-%d", workerIDEnv, i, rng.IntN(1e6)))
		cmd.Stderr = os.Stderr
		out, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(out)
		if !sc.Scan() || sc.Text() != "ready" {
			t.Fatalf("worker %d did not start", i)
		}
		workers[i] = cmd
	}
	for i := range workers {
		start(i)
	}
	defer func() {
		for _, w := range workers {
			w.Process.Kill()
			w.Wait()
		}
	}()

	kills := 0
	deadline := time.Now().Add(3 * time.Minute)
	for {
		var left int
		if err := db.QueryRow(ctx, `SELECT count(*) FROM tasks WHERE kind = 'steps' AND state <> 'succeeded'`).Scan(&left); err != nil {
			t.Fatal(err)
		}
		if left == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d tasks unfinished after 3 minutes (seed %d)", left, seed)
		}
		// Kill a random worker at a random moment while work remains.
		time.Sleep(time.Duration(50+rng.IntN(400)) * time.Millisecond) // the kill schedule, not synchronisation
		if kills < 12 {
			i := rng.IntN(len(workers))
			workers[i].Process.Signal(syscall.SIGKILL)
			workers[i].Wait()
			kills++
			start(i)
		}
	}

	var children, dead int
	db.QueryRow(ctx, `SELECT count(*) FROM tasks WHERE queue = 'children'`).Scan(&children)
	db.QueryRow(ctx, `SELECT count(*) FROM tasks WHERE state = 'dead'`).Scan(&dead)
	var lostLeases int
	db.QueryRow(ctx, `SELECT count(*) FROM attempt_records WHERE outcome = 'lease_expired'`).Scan(&lostLeases)
	t.Logf("kills %d, downstream hits %d, business effects %d, keyed re-sends absorbed %d, expired leases %d",
		kills, down.Hits(), down.Effects(), down.Hits()-down.Effects(), lostLeases)
	if got, want := down.Effects(), int64(2*n); got != want {
		t.Errorf("business effects = %d, want exactly %d (seed %d)", got, want, seed)
	}
	if children != n {
		t.Errorf("child tasks = %d, want exactly %d (seed %d)", children, n, seed)
	}
	if dead != 0 {
		t.Errorf("%d tasks dead (seed %d)", dead, seed)
	}
}

func envInt(name string, def int64) int64 {
	if v, err := strconv.ParseInt(os.Getenv(name), 10, 64); err == nil {
		return v
	}
	return def
}
