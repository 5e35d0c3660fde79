package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/internal/test/testdb"
)

// agentctl list | head -1: once the reader of its output is gone, agentctl
// ends quietly and successfully (it died of SIGPIPE, "signal: broken pipe").
// The real binary, for the signal: this test binary run as agentctl.
func TestOutputReaderGone(t *testing.T) {
	t.Parallel()
	url := testdb.URL(t)
	s := claims.New(testdb.Open(t, url))
	var first int64
	for i := range 3 {
		r, err := s.Enqueue(context.Background(), claims.EnqueueParams{Kind: "echo", Payload: json.RawMessage(`{}`)})
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = r.Task.ID
		}
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "agentctl")
	if err := os.Symlink(exe, bin); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"list"}, {"list", "-o", "json"}, {"show", strconv.FormatInt(first, 10)}} {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		r.Close() // the reader is gone before the first line
		var stderr bytes.Buffer
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(), "DATABASE_URL="+url, statusFileEnv+"=", "GORACE=atexit_sleep_ms=0")
		cmd.Stdout, cmd.Stderr = w, &stderr
		err = cmd.Run()
		w.Close()
		if err != nil || stderr.Len() > 0 {
			t.Errorf("agentctl %v with its reader gone: %v, stderr %q; want exit status 0 and nothing on stderr", args, err, stderr.String())
		}
	}
}
