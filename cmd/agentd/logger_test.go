package main

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// Durations are written as durations in both formats, in groups too.
func TestLogDurations(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	log := newLogger(&buf, slog.LevelInfo, "json")
	log.Info("worker started", "lease", 6*time.Second, slog.Group("retry", "in", 1500*time.Millisecond), "n", 3)
	var line map[string]any
	if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
		t.Fatalf("%v: %s", err, buf.Bytes())
	}
	if line["lease"] != "6s" || line["retry"].(map[string]any)["in"] != "1.5s" || line["n"] != 3.0 {
		t.Fatalf("JSON log line %s: want lease 6s, retry.in 1.5s, n 3", buf.Bytes())
	}

	buf.Reset()
	newLogger(&buf, slog.LevelInfo, "text").Info("x", "lease", 6*time.Second)
	if !strings.Contains(buf.String(), " lease=6s") {
		t.Fatalf("text log line %q: want lease=6s", buf.String())
	}
}
