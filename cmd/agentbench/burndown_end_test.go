package main

import (
	"context"
	"testing"
	"time"

	"github.com/agentledger/agentledger/internal/test/testdb"
)

// The run ends when the workers say every outcome is written, not when the
// check that confirms it returns: the check's own time is not the run's.
func TestBurnDownEndsAtTheWorkersReport(t *testing.T) {
	db := testdb.Open(t, testdb.Empty(t))
	done := make(chan struct{})
	reported := time.Now()
	close(done)
	end, err := waitBurnDown(context.Background(), db, done, `SELECT 0::bigint FROM pg_sleep(0.3)`)
	if err != nil {
		t.Fatal(err)
	}
	if end.Before(reported) || !end.Before(reported.Add(300*time.Millisecond)) {
		t.Fatalf("the run ended %v after the report; want the report's time, before the 300 ms check", end.Sub(reported))
	}
}

// A report that comes before the writes (a handler's count) ends the run at
// the send of the first check that finds nothing left.
func TestBurnDownEndsAtTheCheckThatFindsNothingLeft(t *testing.T) {
	ctx := context.Background()
	db := testdb.Open(t, testdb.Empty(t))
	if _, err := db.Exec(ctx, `CREATE SEQUENCE checks`); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	reported := time.Now()
	close(done)
	// The first check finds one task left, the second none; each takes
	// 300 ms.
	end, err := waitBurnDown(ctx, db, done, `SELECT greatest(0, 2 - nextval('checks')) FROM pg_sleep(0.3)`)
	returned := time.Now()
	if err != nil {
		t.Fatal(err)
	}
	if end.Before(reported.Add(300*time.Millisecond)) || end.After(returned.Add(-300*time.Millisecond)) {
		t.Fatalf("the run ended %v after the report and %v before the wait returned; want the second check's send, "+
			"after the first check's 300 ms and 300 ms before the return", end.Sub(reported), returned.Sub(end))
	}
}
