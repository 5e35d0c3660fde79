package pgplan_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/agentledger/agentledger/internal/pgplan"
	"github.com/agentledger/agentledger/internal/test/testdb"
)

// A session that runs ConnectQuery has every one of the daemon's settings:
// what a pooler's connect_query gives the connections it opens.
func TestConnectQuerySetsTheDaemonsSettings(t *testing.T) {
	ctx := context.Background()
	// A plain connection, as a pooler opens one: not the daemon's pool,
	// whose connections start with the settings.
	conn, err := pgx.Connect(ctx, testdb.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	// Each setting the other way first: the test cluster may have some
	// of them as its defaults. (They are all on or off.)
	for k, v := range pgplan.Settings {
		other := map[string]string{"on": "off", "off": "on"}[v]
		if _, err := conn.Exec(ctx, "SELECT set_config($1, $2, false)", k, other); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := conn.Exec(ctx, pgplan.ConnectQuery()); err != nil {
		t.Fatalf("%s: %v", pgplan.ConnectQuery(), err)
	}
	for k, want := range pgplan.Settings {
		var got string
		if err := conn.QueryRow(ctx, "SELECT current_setting($1)", k).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("%s = %s after %q, want %s", k, got, pgplan.ConnectQuery(), want)
		}
	}
}
