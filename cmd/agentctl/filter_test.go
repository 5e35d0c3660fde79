package main

import (
	"errors"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/agentledger/agentledger"
)

func TestParseWhen(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		in   string
		want time.Time
		bad  bool
	}{
		{in: "", want: time.Time{}},
		{in: "2h", want: now.Add(-2 * time.Hour)},
		{in: "1h30m", want: now.Add(-90 * time.Minute)},
		{in: "0s", want: now},
		{in: "7d", want: now.Add(-7 * 24 * time.Hour)},
		{in: "2026-03-04T05:06:07Z", want: time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)},
		{in: "2026-03-04T05:06:07+02:00", want: time.Date(2026, 3, 4, 3, 6, 7, 0, time.UTC)},
		{in: "2026-03-04", want: time.Date(2026, 3, 4, 0, 0, 0, 0, time.Local)},
		{in: "-2h", bad: true},
		{in: "+2h", bad: true},
		{in: "-1d", bad: true},
		{in: "d", bad: true},
		{in: "2 hours", bad: true},
		{in: "yesterday", bad: true},
		{in: "2026-03-04 05:06", bad: true},
	} {
		got, err := parseWhen("--since", tc.in, now)
		switch {
		case tc.bad && (!errors.Is(err, agentledger.ErrInvalid) || !strings.HasPrefix(err.Error(), "--since: ")):
			t.Errorf("parseWhen(%q) = %v, %v; want an invalid-input error naming --since", tc.in, got, err)
		case !tc.bad && (err != nil || !got.Equal(tc.want)):
			t.Errorf("parseWhen(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

// fakeInfo is a file of the given mode.
type fakeInfo struct{ mode os.FileMode }

func (fakeInfo) Name() string        { return "stdin" }
func (fakeInfo) Size() int64         { return 0 }
func (i fakeInfo) Mode() os.FileMode { return i.mode }
func (fakeInfo) ModTime() time.Time  { return time.Time{} }
func (fakeInfo) IsDir() bool         { return false }
func (fakeInfo) Sys() any            { return nil }

// fakeStdin is standard input of the given mode, reading from Reader.
type fakeStdin struct {
	io.Reader
	mode os.FileMode
}

func (f fakeStdin) Stat() (os.FileInfo, error) { return fakeInfo{f.mode}, nil }

func TestConfirm(t *testing.T) {
	t.Parallel()
	// /dev/null is a character device, and no terminal: nobody is asked.
	null, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	var asked strings.Builder
	if err := (&app{stdin: null, stderr: &asked, started: true}).confirm("Retry 3 tasks?", "retry --all", "retried"); err == nil ||
		!strings.Contains(err.Error(), "standard input is not a terminal") || asked.Len() != 0 {
		t.Errorf("stdin %s: %v, asked %q; want refused without a question", os.DevNull, err, asked.String())
	}
	tty := os.ModeDevice | os.ModeCharDevice
	for _, tc := range []struct {
		name  string
		stdin io.Reader
		code  int // 0: confirmed
		want  string
	}{
		{"yes", fakeStdin{strings.NewReader("y\n"), tty}, 0, ""},
		{"YES", fakeStdin{strings.NewReader(" YES \n"), tty}, 0, ""},
		{"no", fakeStdin{strings.NewReader("n\n"), tty}, 1, "not confirmed: no task retried"},
		{"empty line", fakeStdin{strings.NewReader("\n"), tty}, 1, "not confirmed"},
		{"end of input", fakeStdin{strings.NewReader(""), tty}, 2, "needs confirmation"},
		{"pipe", fakeStdin{strings.NewReader("y\n"), os.ModeNamedPipe}, 2, "standard input is not a terminal"},
		{"reader", strings.NewReader("y\n"), 2, "standard input is not a terminal"},
	} {
		var stderr strings.Builder
		a := &app{stdin: tc.stdin, stderr: &stderr, started: true}
		err := a.confirm("Retry 3 tasks?", "retry --all", "retried")
		if code := exitCode(err, true); code != tc.code || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: exit %d, %v; want exit %d and %q", tc.name, code, err, tc.code, tc.want)
		}
		if tc.code != 2 || tc.name == "end of input" {
			if !strings.HasPrefix(stderr.String(), "Retry 3 tasks? [y/N] ") {
				t.Errorf("%s: asked %q", tc.name, stderr.String())
			}
		}
	}
}
