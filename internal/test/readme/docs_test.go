package readme

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/agentledger/agentledger/notify/outbox"
)

// repoRoot is the module's root, from this package's directory.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

func readDoc(t *testing.T, root, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

var (
	fence      = regexp.MustCompile("(?ms)^```.*?^```[^\n]*$")
	inlineCode = regexp.MustCompile("`[^`\n]*`")
	mdLink     = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	heading    = regexp.MustCompile(`(?m)^#{1,6} +(.+?) *$`)
)

// prose is md without its code: a link or a heading inside code is text.
func prose(md string) string {
	return inlineCode.ReplaceAllString(fence.ReplaceAllString(md, ""), "")
}

// anchors are the fragment ids GitHub gives md's headings.
func anchors(md string) map[string]bool {
	out := map[string]bool{}
	for _, m := range heading.FindAllStringSubmatch(fence.ReplaceAllString(md, ""), -1) {
		slug := githubSlug(m[1])
		id := slug
		for n := 1; out[id]; n++ {
			id = fmt.Sprintf("%s-%d", slug, n)
		}
		out[id] = true
	}
	return out
}

// githubSlug is a heading's anchor as GitHub makes it: lower case, spaces
// to hyphens, punctuation other than - and _ dropped.
func githubSlug(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127 && r != '—' && r != '–' && r != '…':
			b.WriteRune(r)
		}
	}
	return b.String()
}

// TestDocLinks checks that every relative link of the README and the docs
// names a file that exists and, for a heading's anchor, a heading it has.
func TestDocLinks(t *testing.T) {
	root := repoRoot(t)
	files := []string{"README.md", "BENCHMARKS.md"}
	for _, pattern := range []string{"docs/*.md", "docs/bench/*.md"} {
		m, err := filepath.Glob(filepath.Join(root, pattern))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range m {
			files = append(files, filepath.ToSlash(strings.TrimPrefix(f, root+string(filepath.Separator))))
		}
	}
	links := 0
	for _, file := range files {
		md := readDoc(t, root, file)
		for _, m := range mdLink.FindAllStringSubmatch(prose(md), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			links++
			path, anchor, _ := strings.Cut(target, "#")
			rel := file
			if path != "" {
				rel = filepath.ToSlash(filepath.Join(filepath.Dir(file), path))
			}
			if _, err := os.Stat(filepath.Join(root, rel)); err != nil {
				t.Errorf("%s: link %q: %s does not exist", file, target, rel)
				continue
			}
			if anchor == "" {
				continue
			}
			if !strings.HasSuffix(rel, ".md") {
				t.Errorf("%s: link %q: an anchor into a file that is not markdown", file, target)
				continue
			}
			if !anchors(readDoc(t, root, rel))[anchor] {
				t.Errorf("%s: link %q: %s has no heading #%s", file, target, rel, anchor)
			}
		}
	}
	if links == 0 {
		t.Fatal("no relative link found: the link pattern no longer matches")
	}
}

// TestNotificationEvents holds docs/notifications.md's list of events to
// the rules' events in package outbox.
func TestNotificationEvents(t *testing.T) {
	md := readDoc(t, repoRoot(t), "docs/notifications.md")
	const intro = "A rule's `--events` are any of\n"
	_, rest, ok := strings.Cut(md, intro)
	if !ok {
		t.Fatalf("docs/notifications.md has no line %q, which introduces the events", strings.TrimSpace(intro))
	}
	line, _, _ := strings.Cut(rest, "\n")
	want := "`" + strings.Join(outbox.Events, "`, `") + "`"
	if line != want {
		t.Errorf("docs/notifications.md lists the events as\n\t%s\nthe code (outbox.Events) has them as\n\t%s\n(paste the second line after %q)", line, want, strings.TrimSpace(intro))
	}
}

// TestMigrationsTable checks that docs/deployment.md's table of migrations
// names each file of migrations/ once, and nothing else.
func TestMigrationsTable(t *testing.T) {
	root := repoRoot(t)
	md := readDoc(t, root, "docs/deployment.md")
	const header = "| migration | locks | online |\n|---|---|---|\n"
	_, rest, ok := strings.Cut(md, header)
	if !ok {
		t.Fatalf("docs/deployment.md has no table starting %q", header)
	}
	version := regexp.MustCompile(`\b\d{5}\b`)
	listed := map[string]int{}
	for _, row := range strings.Split(rest, "\n") {
		if !strings.HasPrefix(row, "|") {
			break
		}
		first := strings.SplitN(row, "|", 3)[1]
		for _, v := range version.FindAllString(first, -1) {
			listed[v]++
		}
	}
	files, err := filepath.Glob(filepath.Join(root, "migrations", "*.sql"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no migrations found")
	}
	var missing []string
	for _, f := range files {
		v, _, _ := strings.Cut(filepath.Base(f), "_")
		switch n := listed[v]; {
		case n == 0:
			missing = append(missing, filepath.Base(f))
		case n > 1:
			t.Errorf("docs/deployment.md's migrations table lists %s %d times", v, n)
		}
		delete(listed, v)
	}
	for v := range listed {
		t.Errorf("docs/deployment.md's migrations table lists %s, which migrations/ does not have", v)
	}
	if len(missing) > 0 {
		t.Errorf("docs/deployment.md's migrations table leaves out %s: add a row saying what each locks (migrations/doc.go has the rules)", strings.Join(missing, ", "))
	}
}

// TestConfigurationTable holds docs/configuration.md's table of agentd's
// settings to cmd/agentd's: every flag listed with its variable and
// default, and no flag agentd does not have.
func TestConfigurationTable(t *testing.T) {
	root := repoRoot(t)
	settings := agentdSettings(t, root)
	md := readDoc(t, root, "docs/configuration.md")
	rows := map[string][]string{} // flag → the row's cells
	flagCell := regexp.MustCompile("`--([a-z-]+)`")
	for _, line := range strings.Split(md, "\n") {
		if !strings.HasPrefix(line, "| `--") {
			continue
		}
		cells := strings.Split(line, "|")
		for _, m := range flagCell.FindAllStringSubmatch(cells[1], -1) {
			rows[m[1]] = cells
		}
	}
	for _, s := range settings {
		cells, ok := rows[s.flag]
		if !ok {
			t.Errorf("docs/configuration.md's table has no row for --%s (%s, default %q)", s.flag, s.env, s.def)
			continue
		}
		delete(rows, s.flag)
		envCell := cells[2]
		if shared, ok := strings.CutSuffix(strings.Trim(strings.TrimSpace(envCell), "`"), "…"); ok {
			if !strings.HasPrefix(s.env, shared) {
				t.Errorf("docs/configuration.md: --%s's variable is %s, not one of %s", s.flag, s.env, envCell)
			}
		} else if !strings.Contains(envCell, "`"+s.env+"`") {
			t.Errorf("docs/configuration.md: --%s's variable is %s; the table says %s", s.flag, s.env, envCell)
		}
		if s.def != "" && !strings.Contains(cells[3], s.def) {
			t.Errorf("docs/configuration.md: --%s's default is %s; the table says %s", s.flag, s.def, cells[3])
		}
	}
	for flag := range rows {
		t.Errorf("docs/configuration.md's table lists --%s, which agentd does not have", flag)
	}
}

type agentdSetting struct{ flag, env, def string }

// agentdSettings reads the settings table of cmd/agentd/config.go, which
// is package main and cannot be imported.
func agentdSettings(t *testing.T, root string) []agentdSetting {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(root, "cmd", "agentd", "config.go"), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []agentdSetting
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.VAR {
			continue
		}
		for _, spec := range g.Specs {
			v := spec.(*ast.ValueSpec)
			if !slices.ContainsFunc(v.Names, func(n *ast.Ident) bool { return n.Name == "settings" }) {
				continue
			}
			for _, e := range v.Values[0].(*ast.CompositeLit).Elts {
				fields := e.(*ast.CompositeLit).Elts
				str := func(i int) string {
					lit, ok := fields[i].(*ast.BasicLit)
					if !ok {
						t.Fatalf("cmd/agentd/config.go: settings: field %d of a row is not a literal", i)
					}
					s, err := strconv.Unquote(lit.Value)
					if err != nil {
						t.Fatal(err)
					}
					return s
				}
				out = append(out, agentdSetting{flag: str(0), env: str(1), def: str(3)})
			}
		}
	}
	if len(out) == 0 {
		t.Fatal("cmd/agentd/config.go: no settings table found")
	}
	return out
}
