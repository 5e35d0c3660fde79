package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestSustainedChart(t *testing.T) {
	var ws []SustainedWindow
	for i := range 20 {
		w := SustainedWindow{Start: time.Duration(i) * 30 * time.Second, Len: 30 * time.Second, Rate: 1900 + float64(i%3)*40}
		w.Lat.P50, w.Lat.P99 = time.Duration(8+i%4)*time.Millisecond, time.Duration(20+3*i)*time.Millisecond
		ws = append(ws, w)
	}
	f := SustainedFlags{Rate: 2000, Window: 30 * time.Second}
	dir := t.TempDir()
	if out := os.Getenv("AGENTBENCH_CHART_OUT"); out != "" { // to look at it
		dir = out
	}
	for _, name := range []string{"s.png", "s.svg"} {
		path := filepath.Join(dir, name)
		if err := sustainedChart(path, f, ws); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if name == "s.png" && !bytes.HasPrefix(b, []byte("\x89PNG")) || name == "s.svg" && !bytes.Contains(b, []byte("<svg")) {
			t.Errorf("%s is not the image its name says", name)
		}
	}
	if err := checkChartFormat("s.txt"); err == nil || !strings.Contains(err.Error(), ".png") {
		t.Errorf("a .txt chart: %v", err)
	}
}

func TestNiceTicks(t *testing.T) {
	var labels []string
	for _, tk := range (niceTicks{}).Ticks(0, 615) {
		if tk.Label != "" {
			labels = append(labels, tk.Label)
		}
	}
	if got := strings.Join(labels, ","); got != "0,100,200,300,400,500,600" {
		t.Errorf("labels of 0-615: %s", got)
	}
	labels = nil
	for _, tk := range (niceTicks{}).Ticks(0, 0.9) {
		if tk.Label != "" {
			labels = append(labels, tk.Label)
		}
	}
	if got := strings.Join(labels, ","); got != "0.0,0.2,0.4,0.6,0.8" {
		t.Errorf("labels of 0-0.9: %s", got)
	}
}
