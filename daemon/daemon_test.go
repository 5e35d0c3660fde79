package daemon_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/admit"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/daemon"
	"github.com/agentledger/agentledger/internal/test/testdaemon"
	"github.com/agentledger/agentledger/internal/test/testdb"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/operator"
	"github.com/agentledger/agentledger/registry"
	"github.com/agentledger/agentledger/saga"
	"github.com/agentledger/agentledger/tools"
	"github.com/agentledger/agentledger/worker"
)

// ticketTool is a custom keyed tool: it counts its performances.
type ticketTool struct{ performed atomic.Int64 }

func (*ticketTool) Name() string                { return "open_ticket" }
func (*ticketTool) Description() string         { return "Open a ticket" }
func (*ticketTool) Parameters() json.RawMessage { return json.RawMessage(`{"type":"object"}`) }
func (t *ticketTool) Effect(call tools.Call) (ledger.Effect, error) {
	return ledger.Effect{Operation: "tickets.open", Class: ledger.Keyed, Request: call.Args,
		Perform: func(context.Context, ledger.Call) (ledger.Result, error) {
			n := t.performed.Add(1)
			return ledger.Result{Body: json.RawMessage(`{"ticket":` + strings.Repeat("1", int(n)) + `}`)}, nil
		}}, nil
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// A program embeds the daemon with a kind and a tool of its own: the kind
// runs, a steps task calls the tool through the ledger, and a replay of that
// task performs nothing again.
func TestEmbeddedDaemonRunsCustomKindsAndTools(t *testing.T) {
	t.Parallel()
	url := testdb.URL(t)
	d := daemon.New(daemon.Config{
		Database:    daemon.Database{URL: url},
		Worker:      daemon.Worker{PollInterval: 50 * time.Millisecond},
		Maintenance: daemon.Maintenance{NoCron: true, NoJanitor: true},
		Logger:      quiet(),
		Stdout:      io.Discard,
	})
	greeted := make(chan string, 1)
	if err := d.RegisterKind("greet", worker.HandlerFunc(func(_ context.Context, task *agentledger.Task) (json.RawMessage, error) {
		greeted <- string(task.Payload)
		return json.RawMessage(`{"ok":true}`), nil
	})); err != nil {
		t.Fatal(err)
	}
	tickets := &ticketTool{}
	if err := d.RegisterTool(tickets); err != nil {
		t.Fatal(err)
	}
	testdaemon.Run(t, d)
	db := testdb.Open(t, url)
	s := claims.New(db)
	reg := registry.New(db)
	enqueue := func(kind, payload string) int64 {
		t.Helper()
		r, err := s.Enqueue(context.Background(), claims.EnqueueParams{Kind: kind, Payload: json.RawMessage(payload)})
		if err != nil {
			t.Fatalf("enqueue: %v", err)
		}
		return r.Task.ID
	}
	wait := func(id int64) *agentledger.Task {
		t.Helper()
		task := testdaemon.WaitFinished(t, s, id)
		if task.State != agentledger.StateSucceeded {
			t.Fatalf("task %d did not succeed: %s %s", id, task.State, task.LastError)
		}
		return task
	}
	// The pool announced its tools with their schemas, the built-in ones
	// and its own: a steps task whose arguments do not fit is refused at
	// submission.
	live, err := reg.LiveWorkers(context.Background())
	if err != nil || len(live) != 1 || !slices.Contains(live[0].Tools, "open_ticket") || !slices.Contains(live[0].Tools, "notify") {
		t.Fatalf("live workers %+v %v, want the daemon's pool with its tools", live, err)
	}
	schemas, err := reg.ToolSchemas(context.Background(), []string{live[0].ID}, []string{"notify", "open_ticket"})
	if err != nil || len(schemas[live[0].ID]) != 2 {
		t.Fatalf("announced tool schemas %s %v", schemas, err)
	}
	_, err = (&admit.Door{}).Admit(context.Background(), db, admit.Submission{Caller: admit.Operator, Params: claims.EnqueueParams{Kind: "steps",
		Payload: json.RawMessage(`{"steps":[{"tool":"open_ticket"},{"tool":"notify","args":{"channel":"ops"}}]}`)}})
	if err == nil || err.Error() != `payload: step 1: notify: arguments: "text" is required` {
		t.Errorf("admitting a notify step without text: %v", err)
	}

	wait(enqueue("greet", `{"to":"ops"}`))
	if got := <-greeted; got != `{"to": "ops"}` {
		t.Errorf("the custom kind got %s", got)
	}
	id := enqueue("steps", `{"steps":[{"tool":"open_ticket","args":{"title":"disk full"}}]}`)
	wait(id)
	if _, err := operator.New(db).Replay(context.Background(), "", id); err != nil {
		t.Fatal(err)
	}
	if task := wait(id); !strings.Contains(string(task.Result), `"replayed": true`) {
		t.Errorf("replayed result %s: the ledger did not serve the tool's effect", task.Result)
	}
	if n := tickets.performed.Load(); n != 1 {
		t.Errorf("the custom tool performed %d times, want once", n)
	}
}

// shadow is a tool named as a built-in one.
type shadow struct{ *ticketTool }

func (shadow) Name() string { return "http_request" }

// named is a tool with another name and, when set, other parameters.
type named struct {
	*ticketTool
	name   string
	params json.RawMessage
}

func (n named) Name() string { return n.name }
func (n named) Parameters() json.RawMessage {
	if n.params != nil {
		return n.params
	}
	return n.ticketTool.Parameters()
}

// Registration mistakes are refused with the name at fault.
func TestRegistrationMistakes(t *testing.T) {
	t.Parallel()
	d := daemon.New(daemon.Config{})
	noop := worker.HandlerFunc(func(context.Context, *agentledger.Task) (json.RawMessage, error) { return nil, nil })
	if err := d.RegisterKind("steps", noop); err == nil || !strings.Contains(err.Error(), `"steps" is built in`) {
		t.Errorf("a built-in kind's name: %v", err)
	}
	if err := d.RegisterKind("mine", noop); err != nil {
		t.Fatal(err)
	}
	if err := d.RegisterKind("mine", noop); err == nil || !strings.Contains(err.Error(), `"mine" is registered twice`) {
		t.Errorf("a kind registered twice: %v", err)
	}
	if err := d.RegisterTool(&ticketTool{}); err != nil {
		t.Fatal(err)
	}
	if err := d.RegisterTool(&ticketTool{}); err == nil || !strings.Contains(err.Error(), `"open_ticket" is registered twice`) {
		t.Errorf("a tool registered twice: %v", err)
	}
	if err := d.RegisterTool(shadow{&ticketTool{}}); err == nil || !strings.Contains(err.Error(), `"http_request" is built in`) {
		t.Errorf("a tool named as a built-in: %v", err)
	}
	if err := d.RegisterTool((*ticketTool)(nil)); err == nil || !strings.Contains(err.Error(), "the tool is nil") {
		t.Errorf("a nil *ticketTool: %v", err)
	}
	// What no step or model could call, and no task be submitted of.
	if err := d.RegisterKind("my kind", noop); err == nil || !strings.Contains(err.Error(), `kind "my kind" must be 1-128 characters`) {
		t.Errorf("a kind name with a space: %v", err)
	}
	for name, want := range map[string]string{"my tool": `tool name "my tool" must be 1-64`, "shop/re fund": `tool name "shop/re fund" must be 1-64`} {
		if err := d.RegisterTool(named{&ticketTool{}, name, nil}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("a tool named %q: %v", name, err)
		}
	}
	// server/tool is an MCP server's tool (mcptools.Connect's), unless it
	// is in a configured server's namespace.
	withShop := daemon.New(daemon.Config{MCPServers: []daemon.MCPServer{{Name: "shop", Command: []string{"shop-mcp"}}}})
	if err := withShop.RegisterTool(named{&ticketTool{}, "shop/refund", nil}); err == nil ||
		!strings.Contains(err.Error(), `tool "shop/refund" is in the namespace of the configured MCP server shop`) {
		t.Errorf("a tool in a configured MCP server's namespace: %v", err)
	}
	if err := withShop.RegisterTool(named{&ticketTool{}, "crm/lookup", nil}); err != nil {
		t.Errorf("an MCP server's tool registered by hand: %v", err)
	}
	for params, want := range map[string]string{"null": "its Parameters must be a JSON Schema object, not null",
		`{"type":"string"}`: `its Parameters must describe an object ("type": "object"), not "string"`} {
		if err := d.RegisterTool(named{&ticketTool{}, "t2", json.RawMessage(params)}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("parameters %s: %v", params, err)
		}
	}
	d2 := daemon.New(daemon.Config{Database: daemon.Database{URL: testdb.URL(t)}, Maintenance: daemon.Maintenance{NoCron: true, NoJanitor: true},
		Notify: daemon.Notifications{NoDispatch: true}, Logger: quiet(), Stdout: io.Discard})
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- d2.Run(ctx) }()
	select {
	case <-d2.Ready():
	case err := <-ran:
		t.Fatalf("Run: %v", err)
	}
	if err := d2.Run(ctx); !errors.Is(err, daemon.ErrStarted) {
		t.Errorf("a second Run: %v, want ErrStarted", err)
	}
	// After Run started, a kind or a tool would never be served.
	if err := d2.RegisterKind("late", noop); err == nil || !strings.Contains(err.Error(), "after Run has started") {
		t.Errorf("a kind registered after Run: %v", err)
	}
	if err := d2.RegisterTool(&ticketTool{}); err == nil || !strings.Contains(err.Error(), "after Run has started") {
		t.Errorf("a tool registered after Run: %v", err)
	}
	audit := tools.Interceptor(func(ctx context.Context, o *tools.Outgoing, next tools.Next) (ledger.Result, error) {
		return next(ctx, o)
	})
	if err := d2.Intercept(audit); err == nil || !strings.Contains(err.Error(), "after Run has started") {
		t.Errorf("an interceptor added after Run: %v", err)
	}
	if err := d2.Handle("GET /late", http.NotFoundHandler()); !errors.Is(err, daemon.ErrStarted) {
		t.Errorf("a route added after Run: %v", err)
	}
	cancel()
	if err := <-ran; err != nil {
		t.Fatalf("Run: %v", err)
	}
	if err := d.Handle("GET /mine", http.NotFoundHandler()); err != nil {
		t.Fatal(err)
	}
	if err := d.Handle("GET /mine", http.NotFoundHandler()); err == nil || !strings.Contains(err.Error(), `"GET /mine" added twice`) {
		t.Errorf("a route added twice: %v", err)
	}
	if err := d.Handle("GET /nil", nil); err == nil {
		t.Errorf("a route without a handler: accepted")
	}
	if err := d.Handle("GET /nil", http.HandlerFunc(nil)); err == nil {
		t.Errorf("a route with a nil HandlerFunc: accepted")
	}
	for pattern, want := range map[string]string{
		"GET /healthz":         `route "GET /healthz": /healthz is the daemon's`,
		"POST /v1/mine":        `route "POST /v1/mine": /v1/mine is the daemon's`,
		"example.com/v1/tasks": `/v1/tasks is the daemon's`,
		"GET /{x}/{y...}":      "",
		"GET /{a}/{b...}":      `route "GET /{a}/{b...}": pattern "GET /{a}/{b...}" conflicts with pattern "GET /{x}/{y...}"`,
		"GET /{x":              `route "GET /{x": parsing "GET /{x"`,
	} {
		if want == "" {
			continue
		}
		if pattern == "GET /{a}/{b...}" {
			if err := d.Handle("GET /{x}/{y...}", http.NotFoundHandler()); err != nil {
				t.Fatal(err)
			}
		}
		err := d.Handle(pattern, http.NotFoundHandler())
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "registered at") {
			t.Errorf("Handle(%q) = %v, want an error saying %q", pattern, err, want)
		}
	}
	// A handler that would call nothing is no handler.
	var nilFunc func(context.Context, *agentledger.Task, struct{}) (struct{}, error)
	for name, h := range map[string]worker.Handler{
		"nil": nil, "nil HandlerFunc": worker.HandlerFunc(nil), "typed kind of nil": daemon.Kind(nilFunc),
	} {
		if err := daemon.New(daemon.Config{}).RegisterKind("k", h); err == nil || !strings.Contains(err.Error(), "needs a name and a handler") {
			t.Errorf("%s: %v, want it refused", name, err)
		}
	}
}

// Values no daemon can run with are a ConfigError from Run, before
// anything is claimed: never a panic.
func TestConfigMistakesAreConfigErrors(t *testing.T) {
	t.Parallel()
	url := testdb.URL(t)
	base := func() daemon.Config {
		return daemon.Config{Database: daemon.Database{URL: url}, Maintenance: daemon.Maintenance{NoCron: true, NoJanitor: true},
			Notify: daemon.Notifications{NoDispatch: true}, Logger: quiet(), Stdout: io.Discard}
	}
	for name, set := range map[string]func(*daemon.Config){
		"a negative poll interval":     func(c *daemon.Config) { c.Worker.PollInterval = -time.Second },
		"a negative grace":             func(c *daemon.Config) { c.Worker.Grace = -time.Second },
		"an empty queue name":          func(c *daemon.Config) { c.Worker.Queues = []string{""} },
		"a queue name with a space":    func(c *daemon.Config) { c.Worker.Queues = []string{"default", "a b"} },
		"a negative pool size":         func(c *daemon.Config) { c.Database.MaxConns = -3 },
		"a negative API pool size":     func(c *daemon.Config) { c.API.MaxConns = -1 },
		"a model URL without a scheme": func(c *daemon.Config) { c.Model.BaseURL = "localhost:8080/v1" },
		"a database URL that does not parse": func(c *daemon.Config) {
			c.Database.URL = "postgres://u:s3cr3t@127.0.0.1:notaport/db"
		},
		"a database URL without a scheme":               func(c *daemon.Config) { c.Database.URL = "u:s3cr3t@127.0.0.1:5432/db" },
		"a password in the query":                       func(c *daemon.Config) { c.Database.URL = "postgres://127.0.0.1/db?password=s3cr3t&port=abc" },
		"a model URL with a password, no scheme":        func(c *daemon.Config) { c.Model.BaseURL = "u:s3cr3t@localhost:8080/v1" },
		"prepared statements through PostgreSQL itself": func(c *daemon.Config) { c.Database.PgBouncerPrepared = true },
		"a compensation that changes nothing": func(c *daemon.Config) {
			c.Policy.Compensations = map[string]saga.Compensation{"http_request": {Tool: "wait_timer"}}
		},
	} {
		cfg := base()
		set(&cfg)
		want, want2 := "", ""
		if strings.Contains(name, "compensation") {
			want = "Policy.Compensations (agentd's [[compensation]] tables): the compensation of http_request calls wait_timer, which changes nothing"
		}
		if strings.Contains(name, "prepared") {
			want = "Database.PgBouncerPrepared (agentd --pgbouncer-prepared): postgres://"
			want2 = "the server sees prepared statements under the names the client gives them: this is PostgreSQL itself"
		}
		err := refusal(t, name, daemon.New(cfg), want)
		if err != nil && !strings.Contains(err.Error(), want2) {
			t.Errorf("%s: Run = %v, want it to say %q", name, err, want2)
		}
		if err != nil && strings.Contains(err.Error(), "s3cr3t") {
			t.Errorf("%s: Run = %v, which shows the password", name, err)
		}
	}
}

// A mistake that needs no database to be seen is refused before the
// embedded cluster is started: its state directory is never made.
func TestMistakesAreRefusedBeforeAClusterStarts(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "a-file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct {
		set   func(*daemon.Config)
		route string // added with Handle
		state string
		want  string
	}{
		"an address without a port": {set: func(c *daemon.Config) { c.API.Listen = "127.0.0.1" },
			want: "API.Listen (agentd --listen) 127.0.0.1: listen tcp: address 127.0.0.1: missing port in address"},
		"an allow-list entry that is no origin": {set: func(c *daemon.Config) { c.HTTPTools.AllowedHosts = []string{"http://exa mple.com"} },
			want: "http_request"},
		"routes with no server":            {route: "GET /mine", want: "no HTTP server"},
		"a state directory that is a file": {state: file, want: "Database.StateDir (agentd --state-dir or AGENTLEDGER_STATE_DIR) " + file + ": a file, not a directory"},
		"a state directory under a file":   {state: filepath.Join(file, "state"), want: "a part of the path is a file"},
	} {
		state := c.state
		if state == "" {
			state = filepath.Join(dir, strings.ReplaceAll(name, " ", "-"))
		}
		cfg := daemon.Config{Database: daemon.Database{StateDir: state}, Logger: quiet(), Stdout: io.Discard}
		if c.set != nil {
			c.set(&cfg)
		}
		d := daemon.New(cfg)
		if c.route != "" {
			if err := d.Handle(c.route, http.NotFoundHandler()); err != nil {
				t.Fatal(err)
			}
		}
		refusal(t, name, d, c.want)
		if c.state == "" {
			if _, err := os.Stat(state); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("%s: the state directory was made (%v): a cluster was started before the refusal", name, err)
			}
		}
	}
}

// refusal runs d, which is to refuse to start, and fails the test (case
// name) unless Run returns a ConfigError saying want; it returns Run's error.
func refusal(t *testing.T, name string, d *daemon.Daemon, want string) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := d.Run(ctx)
	var ce *daemon.ConfigError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), want) {
		t.Errorf("%s: Run = %v, want a ConfigError saying %q", name, err, want)
	}
	return err
}
