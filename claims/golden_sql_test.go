package claims

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/internal/test/testdb"
)

var updateGolden = flag.Bool("update", false, "rewrite claims/testdata/sql from the statements the store sends")

const goldenDir = "testdata/sql"

// goldenStatements are the statements of the claim protocol whose text the
// golden files hold, by the name of their leading comment, with the Go
// value each is assembled as.
var goldenStatements = []struct{ name, ident, sql string }{
	{"claims.enqueue", "enqueueSQL", enqueueSQL},
	{"claims.lookupKeys", "lookupKeysSQL", lookupKeysSQL},
	{"claims.claim", "claimSQL", claimSQL},
	{"claims.claimDue", "claimDueSQL", claimDueSQL},
	{"claims.claimAlone", "claimAloneSQL", claimAloneSQL},
	{"claims.heartbeat", "heartbeatSQL", heartbeatSQL},
	{"claims.current", "currentSQL", currentSQL},
	{"claims.succeed", "succeedSQL", succeedSQL},
	{"claims.fail", "failSQL", failSQL},
	{"claims.release", "releaseSQL", releaseSQL},
	{"claims.defer", "deferSQL", deferSQL},
	{"claims.stop", "stopSQL", stopSQL},
	{"claims.lockTask", "lockTaskSQL", lockTaskSQL},
	{"claims.cancel", "cancelSQL", cancelSQL},
	{"claims.requeue", "requeueSQL", requeueSQL},
	{"claims.compensate", "compensateSQL", compensateSQL},
}

// goldenCalls drive a Store through every statement it can send to
// submit, claim, renew, finish, and cancel or run again a task; want are
// the names of the statements each call sends, in order (the recorder
// answers with no rows, so a call takes its path for "nothing found").
var goldenCalls = []struct {
	method, variant string
	call            func(context.Context, *Store) error
	want            []string
}{
	{"Store.Enqueue", "with a submission key", func(ctx context.Context, s *Store) error {
		_, err := s.Enqueue(ctx, EnqueueParams{Kind: "noop", SubmissionKey: "k"})
		return err
	}, []string{"claims.enqueue", "claims.lookupKeys"}},
	{"Store.EnqueueBatch", "two keyed tasks, in a transaction", func(ctx context.Context, s *Store) error {
		_, err := s.EnqueueBatch(ctx, []EnqueueParams{{Kind: "noop", SubmissionKey: "a"}, {Kind: "noop", SubmissionKey: "b"}})
		return err
	}, []string{"claims.enqueue", "claims.lookupKeys"}},
	{"Store.Claim", "full", func(ctx context.Context, s *Store) error {
		_, err := s.Claim(ctx, goldenClaim(false, nil))
		return err
	}, []string{"claims.claim"}},
	{"Store.Claim", "due only", func(ctx context.Context, s *Store) error {
		_, err := s.Claim(ctx, goldenClaim(true, &ClaimHint{}))
		return err
	}, []string{"claims.claimDue"}},
	{"Store.Claim", "due only, hinted alone: the lean try, then the full due-only claim", func(ctx context.Context, s *Store) error {
		_, err := s.Claim(ctx, goldenClaim(true, &ClaimHint{n: 1}))
		return err
	}, []string{"claims.claimAlone", "claims.claimDue"}},
	{"Store.Heartbeat", "nothing renewed: then which still hold", func(ctx context.Context, s *Store) error {
		_, err := s.Heartbeat(ctx, goldenLeases, time.Minute)
		return err
	}, []string{"claims.heartbeat", "claims.current"}},
	{"Store.SucceedMany", "", func(ctx context.Context, s *Store) error {
		_, err := s.SucceedMany(ctx, []Success{{Lease: goldenLeases[0], Result: json.RawMessage(`{}`)}, {Lease: goldenLeases[1]}})
		return err
	}, []string{"claims.succeed"}},
	{"Store.FailMany", "", func(ctx context.Context, s *Store) error {
		_, _, err := s.FailMany(ctx, []Failure{{Lease: goldenLeases[0], Error: "boom", Delay: time.Second}, {Lease: goldenLeases[1], Final: true}})
		return err
	}, []string{"claims.fail"}},
	{"Store.ReleaseMany", "", func(ctx context.Context, s *Store) error {
		_, err := s.ReleaseMany(ctx, goldenLeases)
		return err
	}, []string{"claims.release"}},
	{"Store.DeferMany", "", func(ctx context.Context, s *Store) error {
		_, err := s.DeferMany(ctx, []Deferral{{Lease: goldenLeases[0], Until: time.Unix(1e9, 0), Reason: "limit"}})
		return err
	}, []string{"claims.defer"}},
	{"Store.Cancelled", "", func(ctx context.Context, s *Store) error {
		return s.Cancelled(ctx, goldenLeases[0], "cancelled by operator")
	}, []string{"claims.stop"}},
	{"Store.NeedsAttention", "", func(ctx context.Context, s *Store) error {
		return s.NeedsAttention(ctx, goldenLeases[0], "unknown outcome")
	}, []string{"claims.stop"}},
	{"Store.Cancel", "", func(ctx context.Context, s *Store) error {
		_, err := s.Cancel(ctx, "", 1)
		return err
	}, []string{"claims.lockTask", "claims.cancel"}},
	{"Store.Requeue", "replay", func(ctx context.Context, s *Store) error {
		_, err := s.Requeue(ctx, "", 1, Replay)
		return err
	}, []string{"claims.lockTask", "claims.requeue"}},
	{"Store.Requeue", "re-run", func(ctx context.Context, s *Store) error {
		_, err := s.Requeue(ctx, "", 1, Rerun)
		return err
	}, []string{"claims.lockTask", "claims.requeue"}},
	{"Store.Compensate", "", func(ctx context.Context, s *Store) error {
		_, err := s.Compensate(ctx, "", 1)
		return err
	}, []string{"claims.lockTask", "claims.compensate"}},
}

var goldenLeases = []agentledger.Lease{{TaskID: 1, Token: 7}, {TaskID: 2, Token: 8}}

func goldenClaim(dueOnly bool, hint *ClaimHint) ClaimParams {
	return ClaimParams{Queue: "default", Worker: "w", Limit: 10, Lease: time.Minute,
		Kinds: []string{"noop"}, DueOnly: dueOnly, Hint: hint}
}

// golden is what one golden file is made from.
type golden struct {
	name, ident, sql string
	args             int
	senders          []string
}

// file is the golden file's content: a comment line naming the statement's
// Go value, then the statement exactly as sent, then a newline.
func (g *golden) file() string {
	senders, verb := g.senders[len(g.senders)-1], "sends"
	if n := len(g.senders); n > 1 {
		senders, verb = strings.Join(g.senders[:n-1], ", ")+" and "+senders, "send"
	}
	return fmt.Sprintf("-- %s: %s of package claims, as %s %s it (%d parameters); "+
		"go test ./claims -run TestGoldenSQL -update rewrites this file\n%s\n",
		g.name, g.ident, senders, verb, g.args, g.sql)
}

// statementName is the name in a statement's leading /* comment */.
func statementName(sql string) string {
	if rest, ok := strings.CutPrefix(sql, "/* "); ok {
		if name, _, ok := strings.Cut(rest, " */"); ok {
			return name
		}
	}
	return ""
}

// renderGolden runs every golden call against a recorder and returns the
// statements they sent, by name.
func renderGolden(t *testing.T) map[string]*golden {
	t.Helper()
	out := map[string]*golden{}
	for _, st := range goldenStatements {
		out[st.name] = &golden{name: st.name, ident: st.ident, sql: st.sql, args: -1}
	}
	for _, c := range goldenCalls {
		r := &recorder{}
		_ = c.call(context.Background(), New(r)) // with no rows, most calls fail: only what they send matters
		var names []string
		for _, s := range r.sent {
			name := statementName(s.sql)
			names = append(names, name)
			g := out[name]
			switch {
			case name == "":
				t.Errorf("%s (%s) sent a statement without a /* name */: %.80q", c.method, c.variant, s.sql)
				continue
			case g == nil:
				t.Errorf("%s (%s) sent %s, which goldenStatements lacks", c.method, c.variant, name)
				continue
			case s.sql != g.sql:
				t.Errorf("%s (%s) sent a %s that is not %s:\n%s", c.method, c.variant, name, g.ident, s.sql)
			case g.args >= 0 && s.args != g.args:
				t.Errorf("%s sent with %d and with %d arguments", name, g.args, s.args)
			}
			g.args = s.args
			if !slices.Contains(g.senders, c.method) {
				g.senders = append(g.senders, c.method)
			}
		}
		if !slices.Equal(names, c.want) {
			t.Errorf("%s (%s) sent %v, want %v", c.method, c.variant, names, c.want)
		}
	}
	for name, g := range out {
		if g.senders == nil {
			t.Errorf("no golden call sends %s (%s)", name, g.ident)
			delete(out, name)
		}
	}
	return out
}

// TestGoldenSQL keeps claims/testdata/sql/<name>.sql equal to the
// statements of the claim protocol as the store sends them, so that a
// change to a fragment shows in review as a change of the statements it
// is part of, and checks that PostgreSQL prepares each file as it stands,
// with as many parameters as the store passes, and as psql's PREPARE.
func TestGoldenSQL(t *testing.T) {
	stmts := renderGolden(t)
	if t.Failed() {
		t.FailNow()
	}
	if *updateGolden {
		if err := os.MkdirAll(goldenDir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	existing, err := filepath.Glob(filepath.Join(goldenDir, "*.sql"))
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range existing {
		if name := strings.TrimSuffix(filepath.Base(path), ".sql"); stmts[name] == nil {
			if *updateGolden {
				if err := os.Remove(path); err != nil {
					t.Fatal(err)
				}
				continue
			}
			t.Errorf("%s holds no statement the store sends (go test ./claims -run TestGoldenSQL -update removes it)", path)
		}
	}
	names := slices.Sorted(maps.Keys(stmts))
	for _, name := range names {
		g := stmts[name]
		path := filepath.Join(goldenDir, name+".sql")
		want := g.file()
		if *updateGolden {
			if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Errorf("%v (go test ./claims -run TestGoldenSQL -update writes it)", err)
			continue
		}
		if string(got) != want {
			t.Errorf("%s differs from %s as the store sends it (go test ./claims -run TestGoldenSQL -update rewrites it):\n%s",
				path, g.ident, firstDifference(string(got), want))
		}
	}
	if t.Failed() {
		return
	}

	ctx := context.Background()
	conn, err := pgx.Connect(ctx, testdb.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for _, name := range names {
		g := stmts[name]
		text, err := os.ReadFile(filepath.Join(goldenDir, name+".sql"))
		if err != nil {
			t.Fatal(err)
		}
		desc, err := conn.Prepare(ctx, "", string(text))
		if err != nil {
			t.Errorf("PostgreSQL does not prepare %s: %v", name, err)
			continue
		}
		if len(desc.ParamOIDs) != g.args {
			t.Errorf("%s takes %d parameters; the store passes %d", name, len(desc.ParamOIDs), g.args)
		}
		// As a reader prepares it in psql (README.md): a simple query,
		// since Exec sends one when it has no arguments.
		if _, err := conn.Exec(ctx, "PREPARE golden AS "+string(text)); err != nil {
			t.Errorf("PREPARE golden AS %s: %v", name, err)
			continue
		}
		if _, err := conn.Exec(ctx, "DEALLOCATE golden"); err != nil {
			t.Fatal(err)
		}
	}
}

// firstDifference shows the first line where got and want part.
func firstDifference(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := 0; i < max(len(g), len(w)); i++ {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl || i >= len(g) || i >= len(w) {
			return fmt.Sprintf("line %d:\n  file:  %q\n  store: %q", i+1, gl, wl)
		}
	}
	return "(same lines)"
}
