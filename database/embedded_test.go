package database_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/agentledger/agentledger/database"
	"github.com/agentledger/agentledger/pgembed"
)

// The last agentctl to let go of the embedded cluster leaves it running
// while daemons connected to it by URL (which its lock does not see) are
// using it; once they are gone, the next last user stops it.
func TestCloseLeavesTheClusterToClientsByURL(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "database-embedded-*")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if c, err := pgembed.Start(context.Background(), pgembed.Config{StateDir: dir}); err == nil {
			c.Close(context.Background())
		}
		os.RemoveAll(dir)
	})
	running := func() bool {
		_, err := os.Stat(filepath.Join(dir, "pgdata", "postmaster.pid"))
		return err == nil
	}

	db, err := database.Open(ctx, database.Config{StateDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	daemon, err := pgx.Connect(ctx, db.Pool.Config().ConnConfig.ConnString()) // a daemon by URL
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(ctx); err != nil {
		t.Fatal(err)
	}
	var one int
	if err := daemon.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil || !running() {
		t.Fatalf("the daemon connected by URL after the last registered user closed: %v (server running: %v)", err, running())
	}
	daemon.Close(ctx)

	db, err = database.Open(ctx, database.Config{StateDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	// Another connection closed just before (as a daemon's API pool and
	// LISTEN session are): its backend ends a moment after its client, and
	// Close waits for that rather than count it.
	other, err := pgx.Connect(ctx, db.Pool.Config().ConnConfig.ConnString())
	if err != nil {
		t.Fatal(err)
	}
	other.Close(ctx)
	if err := db.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if running() {
		t.Error("the server still runs after its last user closed, with no other client")
	}
}
