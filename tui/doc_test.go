package tui

import (
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// docPath is the console's user guide, whose screens are the goldens.
var docPath = filepath.Join("..", "docs", "tui.md")

// docScreen is a screen in the guide: a marker naming the golden file,
// then a text block.
var docScreen = regexp.MustCompile("(?s)<!-- screen: (\\w+) -->\n```text\n(.*?)```")

// TestDocScreens fails when a screen of docs/tui.md differs from the
// golden file it names, so that the guide cannot drift from the console.
// With -update it rewrites those screens from the goldens as they are on
// disk: update the goldens first (go test ./tui -run TestConsole -update),
// then the guide (go test ./tui -run TestDocScreens -update).
func TestDocScreens(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	matches := docScreen.FindAllStringSubmatch(doc, -1)
	if len(matches) == 0 {
		t.Fatalf("%s has no screen markers", docPath)
	}
	update := flag.Lookup("update") != nil && flag.Lookup("update").Value.String() == "true"
	out := docScreen.ReplaceAllStringFunc(doc, func(block string) string {
		m := docScreen.FindStringSubmatch(block)
		golden, err := os.ReadFile(filepath.Join("testdata", m[1]+".golden"))
		if err != nil {
			t.Errorf("%s names a screen without a golden file: %v", docPath, err)
			return block
		}
		want := docText(string(golden))
		if m[2] != want && !update {
			t.Errorf("%s: the screen of %s differs from testdata/%s.golden (go test ./tui -run TestDocScreens -update rewrites it):\n--- doc\n%s--- golden\n%s",
				docPath, m[1], m[1], m[2], want)
		}
		return "<!-- screen: " + m[1] + " -->\n```text\n" + want + "```"
	})
	if update && out != doc {
		if err := os.WriteFile(docPath, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// docText is a screen as the guide prints it: lines without their
// trailing blanks, runs of blank lines cut to one, none at either end.
func docText(screen string) string {
	var lines []string
	blank := false
	for _, l := range strings.Split(screen, "\n") {
		l = strings.TrimRight(l, " ")
		if l == "" {
			blank = len(lines) > 0
			continue
		}
		if blank {
			lines = append(lines, "")
			blank = false
		}
		lines = append(lines, l)
	}
	return strings.Join(lines, "\n") + "\n"
}

func TestDocText(t *testing.T) {
	t.Parallel()
	if got := docText("\n  \na  \n\n\n b\n\n"); got != "a\n\n b\n" {
		t.Errorf("docText = %q", got)
	}
}
