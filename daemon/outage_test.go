package daemon_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentledger/agentledger/daemon"
	"github.com/agentledger/agentledger/internal/test/logbuf"
	"github.com/agentledger/agentledger/pgembed"
)

// signalHandler is a slog handler that closes a channel the first time
// a record whose message starts with the channel's prefix is handled.
type signalHandler struct {
	slog.Handler
	s *signals
}

type signals struct {
	mu     sync.Mutex
	wait   map[string]chan struct{} // by message prefix
	closed map[string]bool
}

func (s *signals) on(prefix string) <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.wait[prefix] == nil {
		s.wait[prefix] = make(chan struct{})
	}
	return s.wait[prefix]
}

func (h signalHandler) Handle(ctx context.Context, r slog.Record) error {
	err := h.Handler.Handle(ctx, r)
	h.s.mu.Lock()
	defer h.s.mu.Unlock()
	for prefix, ch := range h.s.wait {
		if strings.HasPrefix(r.Message, prefix) && !h.s.closed[prefix] {
			h.s.closed[prefix] = true
			close(ch)
		}
	}
	return err
}

func (h signalHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return signalHandler{h.Handler.WithAttrs(as), h.s}
}

func (h signalHandler) WithGroup(name string) slog.Handler {
	return signalHandler{h.Handler.WithGroup(name), h.s}
}

// A database outage is logged as one line when it goes and one when it is
// back, with its length, where each of the daemon's loops logged each
// failed try (issue 33: 50 lines in 5 s); /readyz says the database is
// unreachable meanwhile, and ready again after. The PostgreSQL is a real
// one, stopped and started.
func TestOutageIsLoggedOnce(t *testing.T) {
	t.Parallel()
	dir, err := os.MkdirTemp("", "agentd-outage-*")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if err := os.Chmod(dir, 0o755); err != nil { // as root the server runs as postgres
		t.Fatal(err)
	}
	ctx := context.Background()
	settings := map[string]string{"fsync": "off"}
	c, err := pgembed.Start(ctx, pgembed.Config{StateDir: dir, Settings: settings})
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	defer func() {
		if !closed {
			c.Close(ctx)
		}
	}()

	logs := &logbuf.Buffer{}
	sig := &signals{wait: map[string]chan struct{}{}, closed: map[string]bool{}}
	gone, back := sig.on("database unreachable"), sig.on("database reachable again")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	d := daemon.New(daemon.Config{
		Database: daemon.Database{URL: c.URL(pgembed.DatabaseName)},
		API:      daemon.API{Listener: ln},
		// Busy loops: a claim every 50ms, a LISTEN session, the dispatcher,
		// the scheduler and the janitor.
		Worker: daemon.Worker{PollInterval: 50 * time.Millisecond},
		Maintenance: daemon.Maintenance{JanitorInterval: 200 * time.Millisecond, Retain: daemon.Retention{
			Ledger: time.Hour, Tasks: time.Hour, Outbox: time.Hour, Inbox: time.Hour, IdempotencyKeys: time.Hour}},
		Logger: slog.New(signalHandler{slog.NewJSONHandler(logs, nil), sig}),
		Stdout: io.Discard,
	})
	runCtx, stop := context.WithCancel(ctx)
	stopped := make(chan error, 1)
	go func() { stopped <- d.Run(runCtx) }()
	defer func() {
		stop()
		if err := <-stopped; err != nil {
			t.Errorf("daemon Run: %v", err)
		}
	}()
	select {
	case <-d.Ready():
	case err := <-stopped:
		stopped <- err
		t.Fatalf("the daemon stopped before it was ready: %v", err)
	}
	readyz := func() (int, string) {
		resp, err := http.Get("http://" + ln.Addr().String() + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if status, body := readyz(); status != http.StatusOK {
		t.Fatalf("/readyz before the outage: %d %s", status, body)
	}

	port := c.Port()
	began := time.Now()
	if err := c.Close(ctx); err != nil { // the last user: the server stops
		t.Fatal(err)
	}
	closed = true
	select {
	case <-gone:
	case <-time.After(time.Minute):
		t.Fatalf("no outage logged within a minute; the log:\n%s", logs.String())
	}
	if status, body := readyz(); status != http.StatusServiceUnavailable || !strings.Contains(body, "database unreachable") {
		t.Errorf("/readyz during the outage: %d %s, want 503 saying the database is unreachable", status, body)
	}
	// The outage lasts a few seconds: some 60 claims, heartbeats and
	// LISTEN retries fail meanwhile.
	time.Sleep(3 * time.Second)

	c, err = pgembed.Start(ctx, pgembed.Config{StateDir: dir, Settings: settings})
	if err != nil {
		t.Fatal(err)
	}
	closed = false
	if c.Port() != port {
		t.Skipf("the cluster came back on port %d, not %d (taken meanwhile): the daemon's URL no longer reaches it", c.Port(), port)
	}
	select {
	case <-back:
	case <-time.After(time.Minute):
		t.Fatalf("the database's return was not logged within a minute; the log:\n%s", logs.String())
	}
	lasted := time.Since(began)
	if status, body := readyz(); status != http.StatusOK {
		t.Errorf("/readyz after the outage: %d %s", status, body)
	}

	// From the first line of the outage to the last: nothing else warns.
	var during []map[string]any
	in := false
	for _, rec := range logLines(t, logs, "") {
		msg, _ := rec["msg"].(string)
		switch {
		case strings.HasPrefix(msg, "database unreachable"):
			in = true
		case msg == "database reachable again":
			in = false
		}
		if in || msg == "database reachable again" {
			during = append(during, rec)
		}
	}
	var warns []string
	for _, rec := range during[1 : len(during)-1] {
		if rec["level"] != "INFO" && rec["level"] != "DEBUG" {
			warns = append(warns, rec["msg"].(string))
		}
	}
	if len(warns) > 0 {
		t.Errorf("%d warnings during the outage beside its own lines: %q", len(warns), warns)
	}
	if n := len(logLines(t, logs, "database unreachable")); n != 1 {
		t.Errorf("the outage's first line logged %d times, want once", n)
	}
	end := during[len(during)-1]
	outage, _ := end["outage"].(float64) // nanoseconds
	held, _ := end["held_back"].(float64)
	if time.Duration(outage) < 3*time.Second || time.Duration(outage) > lasted || held < 1 {
		t.Errorf("the return: %v; want an outage of 3s..%s and the loops' warnings held back", end, lasted)
	}
}
