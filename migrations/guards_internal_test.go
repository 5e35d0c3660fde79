package migrations

import (
	"io/fs"
	"strings"
	"testing"
)

// Every guard of the embedded migrations parses, 00042's among them; a
// mark placed where DownTo would not run its statement is an error.
func TestGuardsParse(t *testing.T) {
	entries, err := fs.ReadDir(files, ".")
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, e := range entries {
		b, err := fs.ReadFile(files, e.Name())
		if err != nil {
			t.Fatal(err)
		}
		gs, err := guards(e.Name(), string(b))
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range gs {
			if !strings.HasPrefix(g, "DO $$") || !strings.HasSuffix(g, "$$;") {
				t.Errorf("%s: a guard that is not one DO block: %q", e.Name(), g)
			}
		}
		if e.Name() == "00042_installation.sql" && len(gs) != 1 {
			t.Errorf("00042's guards: %d, want 1", len(gs))
		}
		found += len(gs)
	}
	if found == 0 {
		t.Fatal("no guard found")
	}
	for name, file := range map[string]string{
		"in the up section":    GuardMark + "\nSELECT 1;\n-- +goose Down\n",
		"not before a block":   "-- +goose Down\n" + GuardMark + "\nSELECT 1;\n",
		"with a comment after": "-- +goose Down\n" + GuardMark + " checks tasks\n-- +goose StatementBegin\nDO $$ $$;\n-- +goose StatementEnd\n",
		"unclosed":             "-- +goose Down\n" + GuardMark + "\n-- +goose StatementBegin\nDO $$ $$;\n",
	} {
		if _, err := guards(name, file); err == nil {
			t.Errorf("a mark %s was taken", name)
		}
	}
}
