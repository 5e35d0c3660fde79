// Package goldensql keeps a package's statements, exactly as its store
// sends them, in golden files under its testdata/sql, so that a change to
// a fragment shows in review as a change of the statements it is part of,
// and a reader can psql what PostgreSQL receives. Package claims holds the
// claim protocol's, package operator the operator's actions'.
package goldensql

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/agentledger/agentledger/internal/test/testdb"
)

// Dir is where a package's golden files live, beside its tests.
const Dir = "testdata/sql"

// Statement is one statement whose text a golden file holds: the name in
// its leading /* comment */, the Go value it is assembled as, and its text.
type Statement struct{ Name, Ident, SQL string }

// Call drives a store through one path: Run sends what the store sends
// (against the recorder, which answers no rows, so a call takes its path
// for "nothing found"); Want are the names of the statements it sends, in
// order.
type Call struct {
	Method, Variant string
	Run             func(context.Context, *Recorder) error
	Want            []string
}

// golden is what one golden file is made from.
type golden struct {
	Statement
	args    int
	senders []string
}

// file is the golden file's content: a comment line naming the statement's
// Go value, then the statement exactly as sent, then a newline.
func (g *golden) file(pkg string) string {
	senders, verb := g.senders[len(g.senders)-1], "sends"
	if n := len(g.senders); n > 1 {
		senders, verb = strings.Join(g.senders[:n-1], ", ")+" and "+senders, "send"
	}
	ident := g.Ident
	if !strings.Contains(ident, ".") { // another package's names itself
		ident += " of package " + pkg
	}
	return fmt.Sprintf("-- %s: %s, as %s %s it (%d parameters); "+
		"go test ./%s -run TestGoldenSQL -update rewrites this file\n%s\n",
		g.Name, ident, senders, verb, g.args, pkg, g.SQL)
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

// render runs every call against a recorder and returns the statements
// they sent, by name.
func render(t *testing.T, stmts []Statement, calls []Call) map[string]*golden {
	t.Helper()
	out := map[string]*golden{}
	for _, st := range stmts {
		out[st.Name] = &golden{Statement: st, args: -1}
	}
	for _, c := range calls {
		r := &Recorder{}
		_ = c.Run(context.Background(), r) // with no rows, most calls fail: only what they send matters
		var names []string
		for _, s := range r.Sent {
			name := statementName(s.SQL)
			names = append(names, name)
			g := out[name]
			switch {
			case name == "":
				t.Errorf("%s (%s) sent a statement without a /* name */: %.80q", c.Method, c.Variant, s.SQL)
				continue
			case g == nil:
				t.Errorf("%s (%s) sent %s, which the golden statements lack", c.Method, c.Variant, name)
				continue
			case s.SQL != g.SQL:
				t.Errorf("%s (%s) sent a %s that is not %s:\n%s", c.Method, c.Variant, name, g.Ident, s.SQL)
			case g.args >= 0 && s.Args != g.args:
				t.Errorf("%s sent with %d and with %d arguments", name, g.args, s.Args)
			}
			g.args = s.Args
			if !slices.Contains(g.senders, c.Method) {
				g.senders = append(g.senders, c.Method)
			}
		}
		if !slices.Equal(names, c.Want) {
			t.Errorf("%s (%s) sent %v, want %v", c.Method, c.Variant, names, c.Want)
		}
	}
	for name, g := range out {
		if g.senders == nil {
			t.Errorf("no golden call sends %s (%s)", name, g.Ident)
			delete(out, name)
		}
	}
	return out
}

// Check keeps pkg's golden files (in Dir, pkg the package's path below the
// module, as go test names it) equal to the statements as calls send them
// — or rewrites them when update is set — and checks that PostgreSQL (a
// migrated test database) prepares each file as it stands, with as many parameters as the
// store passes, and as psql's PREPARE.
func Check(t *testing.T, pkg string, update bool, stmts []Statement, calls []Call) {
	t.Helper()
	sent := render(t, stmts, calls)
	if t.Failed() {
		t.FailNow()
	}
	again := "go test ./" + pkg + " -run TestGoldenSQL -update"
	if update {
		if err := os.MkdirAll(Dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	existing, err := filepath.Glob(filepath.Join(Dir, "*.sql"))
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range existing {
		if name := strings.TrimSuffix(filepath.Base(path), ".sql"); sent[name] == nil {
			if update {
				if err := os.Remove(path); err != nil {
					t.Fatal(err)
				}
				continue
			}
			t.Errorf("%s holds no statement the store sends (%s removes it)", path, again)
		}
	}
	names := slices.Sorted(maps.Keys(sent))
	for _, name := range names {
		g := sent[name]
		path := filepath.Join(Dir, name+".sql")
		want := g.file(pkg)
		if update {
			if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Errorf("%v (%s writes it)", err, again)
			continue
		}
		if string(got) != want {
			t.Errorf("%s differs from %s as the store sends it (%s rewrites it):\n%s",
				path, g.Ident, again, firstDifference(string(got), want))
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
		g := sent[name]
		text, err := os.ReadFile(filepath.Join(Dir, name+".sql"))
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
		// As a reader prepares it in psql (the README beside the files): a
		// simple query, since Exec sends one when it has no arguments.
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
