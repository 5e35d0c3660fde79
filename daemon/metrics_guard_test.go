package daemon_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentledger/agentledger/daemon"
	"github.com/agentledger/agentledger/internal/test/testdaemon"
	"github.com/agentledger/agentledger/internal/test/testdb"
)

// With a metrics token, /metrics answers only requests bearing it.
func TestMetricsToken(t *testing.T) {
	t.Parallel()
	ln := metricsDaemon(t)
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
	for _, auth := range []string{"", "Bearer wrong", "Bearer " + token + "x", "Basic " + token, token} {
		if status, body := get(auth); status != http.StatusUnauthorized || strings.Contains(body, token) {
			t.Errorf("%q: %d %s", auth, status, body)
		}
	}
	// The scheme's name is case-insensitive (RFC 7235), as for the API.
	for _, scheme := range []string{"Bearer ", "bearer ", "BEARER "} {
		if status, body := get(scheme + token); status != http.StatusOK || !strings.Contains(body, "agentledger_") {
			t.Errorf("with the token as %q: %d", scheme+"…", status)
		}
	}
}

// The daemon's /metrics shares the API's failure budget per client, and
// behind a trusted proxy (here loopback) the client is the one
// X-Forwarded-For names: one scraper's wrong tokens refuse it, not another
// behind the same proxy.
func TestMetricsTokenBehindTrustedProxy(t *testing.T) {
	t.Parallel()
	ln := metricsDaemon(t, "127.0.0.1")
	get := func(path, client, auth string) (int, string) {
		req, _ := http.NewRequest(http.MethodGet, "http://"+ln.Addr().String()+path, nil)
		req.Header.Set("Authorization", auth)
		req.Header.Set("X-Forwarded-For", client)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		return resp.StatusCode, string(b)
	}
	for i := range 21 {
		if status, _ := get("/metrics", "198.51.100.1", fmt.Sprintf("Bearer wrong-%d", i)); status != http.StatusUnauthorized {
			t.Fatalf("wrong token %d: %d", i, status)
		}
	}
	if status, body := get("/metrics", "198.51.100.1", "Bearer "+token); status != http.StatusUnauthorized || !strings.Contains(body, "too many failed authentications") {
		t.Errorf("the refused client with the token: %d, %d bytes", status, len(body)) // the figures, if served
	}
	if status, body := get("/v1/tasks", "198.51.100.1", "Bearer alt_whatever"); status != http.StatusUnauthorized || !strings.Contains(body, "too many failed authentications") {
		t.Errorf("the refused client on the API: %d %s", status, body)
	}
	if status, body := get("/metrics", "198.51.100.2", "Bearer "+token); status != http.StatusOK || !strings.Contains(body, "agentledger_") {
		t.Errorf("another client behind the proxy: %d", status)
	}
}

// A trusted proxy that is not an address or a prefix stops the daemon
// before it starts, naming the entry.
func TestTrustedProxiesMistake(t *testing.T) {
	t.Parallel()
	d := daemon.New(daemon.Config{
		Database:    daemon.Database{URL: testdb.URL(t)},
		API:         daemon.API{Listen: "127.0.0.1:0", TrustedProxies: []string{"10.0.0.0/8", "10.0.0.0/33"}},
		Maintenance: daemon.Maintenance{NoCron: true, NoJanitor: true},
		Notify:      daemon.Notifications{NoDispatch: true},
		Logger:      quiet(),
		Stdout:      io.Discard,
	})
	var ce *daemon.ConfigError
	if err := d.Run(context.Background()); !errors.As(err, &ce) || !strings.Contains(err.Error(), `API.TrustedProxies (agentd --trusted-proxies): trusted proxy "10.0.0.0/33" is not an IP address or CIDR prefix`) {
		t.Errorf("Run = %v, want a ConfigError naming the entry", err)
	}
}

// token is the metrics token metricsDaemon's /metrics requires.
const token = "m3tr1cs-t0ken-for-tests"

// metricsDaemon runs a daemon whose /metrics requires token, behind the
// trusted proxies given, and returns its listener.
func metricsDaemon(t *testing.T, trustedProxies ...string) net.Listener {
	t.Helper()
	file := filepath.Join(t.TempDir(), "metrics-token")
	if err := os.WriteFile(file, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	d := daemon.New(daemon.Config{
		Database: daemon.Database{URL: testdb.URL(t)},
		API: daemon.API{
			Listener:         ln,
			MetricsTokenFile: file,
			TrustedProxies:   trustedProxies,
		},
		Worker:      daemon.Worker{PollInterval: time.Second},
		Maintenance: daemon.Maintenance{NoCron: true, NoJanitor: true},
		Notify:      daemon.Notifications{NoDispatch: true},
		Logger:      quiet(),
		Stdout:      io.Discard,
	})
	testdaemon.Run(t, d)
	return ln
}
