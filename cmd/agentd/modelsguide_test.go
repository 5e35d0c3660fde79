package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Every config file example of docs/models.md is a configuration agentd
// starts with, and names the endpoint settings it claims.
func TestModelsGuideExamplesParse(t *testing.T) {
	t.Parallel()
	guide, err := os.ReadFile(filepath.Join("..", "..", "docs", "models.md"))
	if err != nil {
		t.Fatal(err)
	}
	examples := regexp.MustCompile("(?ms)^```toml\n(.*?)^```").FindAllStringSubmatch(string(guide), -1)
	if len(examples) < 7 {
		t.Fatalf("docs/models.md has %d toml examples, want one per endpoint (7)", len(examples))
	}
	dir := t.TempDir()
	for i, ex := range examples {
		path := writeFile(t, dir, "models.toml", ex[1])
		cmd := newRootCmd(func(string) string { return "" }, nil)
		if err := cmd.ParseFlags([]string{"--config", path}); err != nil {
			t.Fatal(err)
		}
		cfg, err := parse(cmd.Flags(), func(string) string { return "" })
		if err != nil {
			t.Errorf("example %d:\n%s: %v", i, ex[1], err)
			continue
		}
		if cfg.Model.BaseURL == "" || cfg.Model.Name == "" ||
			strings.Contains(ex[1], "llm-azure-api-version") != (cfg.Model.AzureAPIVersion != "") {
			t.Errorf("example %d:\n%s: model settings %+v", i, ex[1], cfg.Model)
		}
	}
}
