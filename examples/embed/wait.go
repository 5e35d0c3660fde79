package main

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/database"
	"github.com/agentledger/agentledger/migrations"
)

func bytesReader(b []byte) *bytes.Reader { return bytes.NewReader(b) }

// waitForSchema opens a pool on the daemon's database once the daemon has
// migrated it.
func waitForSchema(ctx context.Context, url string) (*database.DB, error) {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		db, err := database.Open(ctx, database.Config{URL: url})
		if err == nil {
			if migrated(ctx, db) {
				return db, nil
			}
			_ = db.Close(ctx)
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("the daemon did not prepare the database within 2 minutes: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// migrated reports whether every migration of this build is applied.
func migrated(ctx context.Context, db *database.DB) bool {
	m, err := migrations.New(db.Pool, nil)
	if err != nil {
		return false
	}
	defer m.Close()
	v, err := m.Version(ctx)
	return err == nil && v == m.Latest()
}

// waitSucceeded waits until task id has succeeded.
func waitSucceeded(ctx context.Context, s *claims.Store, id int64) error {
	deadline := time.Now().Add(time.Minute)
	for {
		t, err := s.Get(ctx, "", id)
		if err != nil {
			return err
		}
		switch t.State {
		case agentledger.StateSucceeded:
			return nil
		case agentledger.StateDead, agentledger.StateNeedsAttention:
			return fmt.Errorf("task %d is %s: %s", id, t.State, t.LastError)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("task %d is still %s after a minute", id, t.State)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
