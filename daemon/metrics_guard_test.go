package daemon_test

import (
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentledger/agentledger/daemon"
	"github.com/agentledger/agentledger/internal/testdaemon"
	"github.com/agentledger/agentledger/internal/testdb"
)

// With a metrics token, /metrics answers only requests bearing it.
func TestMetricsToken(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "metrics-token")
	const token = "m3tr1cs-t0ken-for-tests"
	if err := os.WriteFile(file, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	d := daemon.New(daemon.Config{DatabaseURL: testdb.URL(t), Logger: quiet(), Stdout: io.Discard, Listener: ln,
		MetricsTokenFile: file, PollInterval: time.Second, NoCron: true, NoJanitor: true, NoDispatch: true})
	testdaemon.Run(t, d)
	get := func(auth string) (int, string) {
		req, _ := http.NewRequest(http.MethodGet, "http://"+ln.Addr().String()+"/metrics", nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, auth := range []string{"", "Bearer wrong", "Bearer " + token + "x"} {
		if status, body := get(auth); status != http.StatusUnauthorized || strings.Contains(body, token) {
			t.Errorf("%q: %d %s", auth, status, body)
		}
	}
	if status, body := get("Bearer " + token); status != http.StatusOK || !strings.Contains(body, "agentledger_") {
		t.Errorf("with the token: %d", status)
	}
}
