package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentledger/agentledger/internal/secretfmt"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/mcptools"
	"github.com/agentledger/agentledger/tools"
)

// MCPServer is an MCP tool server whose tools steps and agent tasks may
// call as "name/tool", each call through the ledger (package mcptools).
type MCPServer struct {
	// Name prefixes the server's tools (mcptools.CheckServerName says
	// what it may be).
	Name string
	// Command starts a stdio server (its argv); the daemon supervises it,
	// starting it again with backoff when it exits.
	Command []string
	// Env and EnvFiles are a stdio server's environment beyond the minimal
	// one it always gets (mcptools.DefaultEnv: HOME, LOGNAME, PATH, SHELL,
	// TERM, USER, a locale, TMPDIR), overriding it by name: Env's values
	// as given, EnvFiles' read from the files named when the daemon starts
	// (the content, one trailing newline trimmed), for secrets. Nothing
	// else of the daemon's environment reaches the server. Values are
	// never logged or printed; errors name the variable, not the value.
	Env      map[string]string
	EnvFiles map[string]string
	// InheritEnv gives the server the daemon's whole environment instead
	// of the minimal one (Env and EnvFiles still set over it): every
	// secret the daemon was started with (its model's API key, its Slack
	// token, its database URL) then reaches the server, and whoever may
	// call a tool of it that reports its environment. For servers the
	// operator trusts with all of them; the config file has no key for it.
	InheritEnv bool
	// URL is a streamable-HTTP server; HeadersFile names a JSON object of
	// headers sent with every request (secrets: never logged or stored).
	URL         string
	HeadersFile string
	// Classes overrides the effect class of tools by their name on the
	// server.
	Classes map[string]ledger.Class
	// ApproveDestructive makes every call of the server's destructive
	// tools (class unsafe: annotated destructive and not idempotent, or
	// classed so) wait for a person's approval, with Policy.Approval's
	// approvers and timeout (agentd's approve_destructive).
	ApproveDestructive bool
}

func (s MCPServer) check() error {
	if s.Name == "" {
		return fmt.Errorf("an MCP server needs a name")
	}
	if err := mcptools.CheckServerName(s.Name); err != nil {
		return err
	}
	switch {
	case (len(s.Command) == 0) == (s.URL == ""):
		return fmt.Errorf("MCP server %s: give either a command or a url", s.Name)
	case s.HeadersFile != "" && s.URL == "":
		return fmt.Errorf("MCP server %s: a headers file goes with a url", s.Name)
	case s.URL != "" && (len(s.Env) > 0 || len(s.EnvFiles) > 0 || s.InheritEnv):
		return fmt.Errorf("MCP server %s: an environment goes with a command; a url server has none", s.Name)
	}
	for _, tool := range slices.Sorted(maps.Keys(s.Classes)) {
		if c := s.Classes[tool]; !mcptools.CallClass(c) {
			return fmt.Errorf("MCP server %s: class of %s: %q: an MCP call is pure, keyed or unsafe", s.Name, tool, c)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(s.Env)) {
		if err := mcptools.CheckEnv(name, s.Env[name]); err != nil {
			return fmt.Errorf("MCP server %s: env: %w", s.Name, err)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(s.EnvFiles)) {
		switch err := mcptools.CheckEnvName(name); {
		case err != nil:
			return fmt.Errorf("MCP server %s: env files: %w", s.Name, err)
		case s.EnvFiles[name] == "":
			return fmt.Errorf("MCP server %s: env files: %s names no file", s.Name, name)
		}
		if _, ok := s.Env[name]; ok {
			return fmt.Errorf("MCP server %s: %s is given both a value and a file", s.Name, name)
		}
	}
	return nil
}

// environ is the server's process environment: the minimal one (or the
// daemon's, with InheritEnv) with Env and the files' values over it.
func (s MCPServer) environ() ([]string, error) {
	vars := maps.Clone(s.Env)
	for _, name := range slices.Sorted(maps.Keys(s.EnvFiles)) {
		b, err := os.ReadFile(s.EnvFiles[name])
		if err != nil {
			return nil, fmt.Errorf("MCP server %s: the env file of %s: %w", s.Name, name, err)
		}
		v, ok := strings.CutSuffix(string(b), "\r\n")
		if !ok {
			v = strings.TrimSuffix(v, "\n")
		}
		if strings.ContainsRune(v, 0) {
			// The error names the file, never its contents.
			return nil, fmt.Errorf("MCP server %s: the env file of %s, %s, holds a NUL byte", s.Name, name, s.EnvFiles[name])
		}
		if vars == nil {
			vars = map[string]string{}
		}
		vars[name] = v
	}
	var base []string // nil: mcptools.DefaultEnv
	if s.InheritEnv {
		base = os.Environ()
	}
	return mcptools.Env(base, vars)
}

// String describes the server with its env values redacted.
func (s MCPServer) String() string {
	return fmt.Sprintf("MCPServer{Name:%q Command:%q URL:%q HeadersFile:%q Env:%s EnvFiles:%v InheritEnv:%t Classes:%v}",
		s.Name, s.Command, s.URL, s.HeadersFile, s.shownEnv(), s.EnvFiles, s.InheritEnv, s.Classes)
}

// GoString is String for %#v.
func (s MCPServer) GoString() string { return "daemon." + s.String() }

// Format prints String (GoString for %#v) whatever the verb, so that no
// verb prints an env value.
func (s MCPServer) Format(f fmt.State, verb rune) {
	secretfmt.Format(f, verb, s.String(), s.GoString())
}

// LogValue is the server for slog, env values redacted.
func (s MCPServer) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("name", s.Name),
		slog.Any("command", s.Command),
		slog.String("url", s.URL),
		slog.String("headers_file", s.HeadersFile),
		slog.String("env", s.shownEnv()),
		slog.Any("env_files", s.EnvFiles),
		slog.Bool("inherit_env", s.InheritEnv),
		slog.Any("classes", s.Classes),
	)
}

// shownEnv is Env's names, each value "[redacted]".
func (s MCPServer) shownEnv() string {
	names := slices.Sorted(maps.Keys(s.Env))
	for i, name := range names {
		names[i] = name + "=[redacted]"
	}
	return "[" + strings.Join(names, " ") + "]"
}

// mcpSupervisor keeps one server connected and its tools registered.
type mcpSupervisor struct {
	srv     MCPServer
	reg     *tools.Registry
	headers map[string]string
	env     []string // a stdio server's environment
	log     *slog.Logger

	mu    sync.Mutex
	state string // "connecting", "connected", or why it is not
	// changed is told when the server connects or drops (the pool
	// announces itself again at once: the fleet's submit checks and
	// claims see its tools without waiting for the next announcement);
	// set before run starts.
	changed func()
}

// newMCPSupervisor checks srv and reads its headers file or env files;
// until the server is connected its tools are unavailable, with the
// reason.
func newMCPSupervisor(srv MCPServer, reg *tools.Registry, log *slog.Logger) (*mcpSupervisor, error) {
	if err := srv.check(); err != nil {
		return nil, &ConfigError{err}
	}
	s := &mcpSupervisor{srv: srv, reg: reg, log: log.With("mcp_server", srv.Name), state: "connecting"}
	if len(srv.Command) > 0 {
		env, err := srv.environ()
		if err != nil {
			return nil, &ConfigError{err}
		}
		s.env = env
	}
	if srv.HeadersFile != "" {
		b, err := os.ReadFile(srv.HeadersFile)
		if err != nil {
			return nil, &ConfigError{fmt.Errorf("MCP server %s: headers file: %w", srv.Name, err)}
		}
		if err := json.Unmarshal(b, &s.headers); err != nil {
			// The error names the file, never its contents.
			return nil, &ConfigError{fmt.Errorf("MCP server %s: headers file %s is not a JSON object of strings", srv.Name, srv.HeadersFile)}
		}
	}
	reg.Unavailable(srv.Name+"/", s.why)
	return s, nil
}

// why says why the server's tools are unavailable; "" while it is
// connected: a tool it does not offer then is unknown.
func (s *mcpSupervisor) why() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state == "connected" {
		return ""
	}
	return fmt.Sprintf("MCP server %s is not connected (%s)", s.srv.Name, s.state)
}

// State is the server's state, for /readyz.
func (s *mcpSupervisor) State() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state
}

func (s *mcpSupervisor) set(state string) {
	s.mu.Lock()
	s.state = state
	s.mu.Unlock()
	if s.changed != nil {
		s.changed()
	}
}

// run connects, registers the tools, waits for the session to end and
// connects again, with backoff (1 s doubling to a minute), until ctx ends.
func (s *mcpSupervisor) run(ctx context.Context) error {
	backoff := time.Second
	for ctx.Err() == nil {
		started := time.Now()
		srv, err := mcptools.Connect(ctx, s.srv.Name, s.transport(), mcptools.Options{Classes: s.srv.Classes})
		if err == nil {
			s.reg.Remove(s.srv.Name + "/")
			for _, t := range srv.Tools() {
				s.reg.Register(t)
			}
			// A class set for a tool the server does not offer (a typo)
			// would leave the tool at its annotations' class unnoticed.
			for _, name := range slices.Sorted(maps.Keys(s.srv.Classes)) {
				if !slices.ContainsFunc(srv.Tools(), func(t tools.Tool) bool { return t.Name() == s.srv.Name+"/"+name }) {
					s.log.Warn("mcp: a class is set for a tool the server does not offer", "tool", name,
						"offered", strings.Join(toolNames(srv.Tools(), s.srv.Name+"/"), ", "))
				}
			}
			s.set("connected")
			s.log.Info("mcp: connected", "tools", len(srv.Tools()))
			stop := context.AfterFunc(ctx, func() { srv.Close() })
			err = srv.Wait()
			stop()
			if ctx.Err() != nil {
				return nil
			}
			// Not connected before its tools go: a call meanwhile waits
			// for the server, not "unknown tool" for good.
			s.set("disconnected")
			s.reg.Remove(s.srv.Name + "/")
			if err == nil {
				err = fmt.Errorf("the session ended")
			}
		}
		if time.Since(started) > time.Minute {
			backoff = time.Second
		}
		s.set(fmt.Sprintf("%v; retrying in %s", err, backoff))
		s.log.Warn("mcp: not connected", "err", err, "retry_in", backoff)
		select {
		case <-ctx.Done():
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, time.Minute)
	}
	return nil
}

func (s *mcpSupervisor) transport() mcp.Transport {
	if len(s.srv.Command) > 0 {
		cmd := exec.Command(s.srv.Command[0], s.srv.Command[1:]...)
		cmd.Env = s.env // never nil: the minimal environment at least
		cmd.Stderr = os.Stderr
		return &mcp.CommandTransport{Command: cmd}
	}
	hc := &http.Client{Transport: headerTransport{base: http.DefaultTransport, headers: s.headers}}
	return &mcp.StreamableClientTransport{Endpoint: s.srv.URL, HTTPClient: hc}
}

// headerTransport adds the server's secret headers to every request.
type headerTransport struct {
	base    http.RoundTripper
	headers map[string]string
}

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h.headers {
		r.Header.Set(k, v)
	}
	return h.base.RoundTrip(r)
}

// mcpStates are the servers' states by name.
func mcpStates(sups []*mcpSupervisor) map[string]string {
	out := make(map[string]string, len(sups))
	for _, s := range sups {
		out[s.srv.Name] = s.State()
	}
	return out
}

// mcpSupervisors checks the configured servers and prepares a supervisor
// for each.
func mcpSupervisors(servers []MCPServer, reg *tools.Registry, log *slog.Logger) ([]*mcpSupervisor, error) {
	seen := map[string]bool{}
	var out []*mcpSupervisor
	for _, srv := range servers {
		if seen[srv.Name] {
			return nil, &ConfigError{fmt.Errorf("MCP server %s is configured twice", srv.Name)}
		}
		seen[srv.Name] = true
		s, err := newMCPSupervisor(srv, reg, log)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// toolNames are the names of ts without prefix.
func toolNames(ts []tools.Tool, prefix string) []string {
	names := make([]string, len(ts))
	for i, t := range ts {
		names[i] = strings.TrimPrefix(t.Name(), prefix)
	}
	return names
}
