package daemon_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentledger/agentledger/daemon"
	"github.com/agentledger/agentledger/internal/test/testdaemon"
	"github.com/agentledger/agentledger/internal/test/testdb"
	"github.com/agentledger/agentledger/tenants"
)

// The HTTP API has connections of its own: with every connection of the
// worker pool held, an authenticated request is still answered.
func TestAPIHasItsOwnConnections(t *testing.T) {
	t.Parallel()
	url := testdb.URL(t)
	ctx := context.Background()
	ts := tenants.NewStore(testdb.Open(t, url))
	if _, err := ts.CreateTenant(ctx, "acme"); err != nil {
		t.Fatal(err)
	}
	_, token, err := ts.CreateToken(ctx, "acme", "test", 0)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var held []*pgxpool.Conn
	d := daemon.New(daemon.Config{
		Database:    daemon.Database{URL: url, MaxConns: 3},
		API:         daemon.API{Listener: ln},
		Worker:      daemon.Worker{PollInterval: time.Second},
		Maintenance: daemon.Maintenance{NoCron: true, NoJanitor: true},
		Notify:      daemon.Notifications{NoDispatch: true},
		Hooks: daemon.Hooks{BeforeRun: func(ctx context.Context, db *pgxpool.Pool) error {
			for range db.Config().MaxConns {
				c, err := db.Acquire(ctx)
				if err != nil {
					return err
				}
				held = append(held, c)
			}
			return nil
		}},
		Logger: quiet(),
		Stdout: io.Discard,
	})
	testdaemon.Run(t, d)
	defer func() {
		for _, c := range held {
			c.Release()
		}
	}()
	req, _ := http.NewRequest(http.MethodGet, "http://"+ln.Addr().String()+"/v1/tasks", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	client := &http.Client{Timeout: 10 * time.Second}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("with the workers' connections all held: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("status %d", resp.StatusCode)
	}
}
