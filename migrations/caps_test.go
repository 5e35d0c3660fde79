package migrations_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentledger/agentledger/internal/test/testdb"
)

// fileStatements splits one section of a migration file ("Up" or "Down")
// into the statements goose runs, a function body whole.
func fileStatements(t *testing.T, file, section string) []string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	up, down, _ := strings.Cut(string(b), "-- +goose Down")
	text := map[string]string{"Up": up, "Down": down}[section]
	var stmts []string
	var cur strings.Builder
	inBody := false
	for line := range strings.SplitSeq(text, "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case trimmed == "-- +goose StatementBegin":
			inBody = true
		case trimmed == "-- +goose StatementEnd":
			inBody = false
			stmts = append(stmts, cur.String())
			cur.Reset()
		case inBody:
			cur.WriteString(line + "\n")
		case strings.HasPrefix(trimmed, "--"), trimmed == "":
		default:
			cur.WriteString(line + "\n")
			if strings.HasSuffix(trimmed, ";") {
				stmts = append(stmts, cur.String())
				cur.Reset()
			}
		}
	}
	return stmts
}

// A capped tenant's room can be counted after every statement of 00048,
// up and down, as a claim reaching the tenant counts it while the
// migration runs beside the daemons. The counting functions' parameter is
// named capped, as the column 00048 adds: a function left naming it bare
// once the column exists failed every such claim ("column reference is
// ambiguous") until the migration's end.
func TestCapsAreCountedThroughoutMigration48(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.Open(t, testdb.Empty(t))
	m := newMigrator(t, pool)
	if _, err := m.UpTo(ctx, 47); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`INSERT INTO tenant_shares (tenant, weight, max_running, source) VALUES ('a', 1, 5, 'operator')`,
		`INSERT INTO tasks (tenant, kind, state, attempt, lease_owner, lease_token, lease_expires_at, attempted_at)
		 SELECT 'a', 'noop', 'running', 1, 'w', g, now() + interval '1 hour', now() FROM generate_series(1, 2) g`,
	} {
		if _, err := pool.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	room := func(after string) {
		t.Helper()
		var turn, room int
		if err := pool.QueryRow(ctx, `SELECT agentledger_tenant_turn('a')`).Scan(&turn); err != nil {
			t.Fatalf("after %.80q: the turn's count: %v", after, err)
		}
		if err := pool.QueryRow(ctx, `SELECT room FROM agentledger_tenant_room(ARRAY['a'])`).Scan(&room); err != nil {
			t.Fatalf("after %.80q: the room's count: %v", after, err)
		}
		if turn != 3 || room != 3 {
			t.Fatalf("after %.80q: a's room %d and %d, want 3 (a cap of 5, 2 running)", after, turn, room)
		}
	}
	run := func(section string) {
		for _, s := range fileStatements(t, "00048_capped_running.sql", section) {
			if _, err := pool.Exec(ctx, s); err != nil {
				t.Fatalf("%s: %.80q: %v", section, s, err)
			}
			room(strings.TrimSpace(s))
		}
	}
	room("version 47")
	run("Up")
	run("Down")
	checkFunctionsAsBefore(ctx, t, pool)
}

// checkFunctionsAsBefore checks that 00048's down leaves the counting
// functions as 00024 and 00036 wrote them.
func checkFunctionsAsBefore(ctx context.Context, t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	for name, file := range map[string]string{
		"agentledger_tenant_room": "00024_tenant_shares.sql",
		"agentledger_tenant_turn": "00036_tenant_turns.sql",
	} {
		var src string
		if err := pool.QueryRow(ctx, `SELECT prosrc FROM pg_proc WHERE proname = $1`, name).Scan(&src); err != nil {
			t.Fatal(err)
		}
		var want string
		for _, s := range fileStatements(t, file, "Up") {
			if strings.Contains(s, "FUNCTION "+name+"(") {
				_, body, _ := strings.Cut(s, "$$")
				want, _, _ = strings.Cut(body, "$$")
			}
		}
		if want == "" || src != want {
			t.Errorf("%s after 00048's down:\n%s\nwant %s's:\n%s", name, src, file, want)
		}
	}
}
