package daemon

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"syscall"

	"github.com/agentledger/agentledger/admit"
	"github.com/agentledger/agentledger/approvals/slackui"
	"github.com/agentledger/agentledger/httpapi"
	"github.com/agentledger/agentledger/notify"
	"github.com/agentledger/agentledger/pgembed"
	"github.com/agentledger/agentledger/tools"
	"github.com/agentledger/agentledger/waits"
)

// The checks here need no database: Run makes them (and RegisterTool and
// Handle theirs) before a cluster is started or a schema migrated, so that
// a mistake costs nothing.

// builtinTools are the tools every daemon has besides the registered ones:
// the built-ins, notify, and the wait tools.
func builtinTools(http tools.HTTPConfig, door *admit.Door, store *waits.Store) ([]tools.Tool, error) {
	ts, err := tools.Builtins(tools.BuiltinConfig{HTTP: http, Door: door})
	if err != nil {
		return nil, err
	}
	return append(append(ts, notify.NewTool()), waits.Tools(store)...), nil
}

// builtinToolNames are builtinTools' names, for RegisterTool's check (no
// configuration changes a name).
func builtinToolNames() []string {
	ts, _ := builtinTools(tools.HTTPConfig{}, nil, nil) // the zero HTTP configuration is valid: it allows no host
	names := make([]string, len(ts))
	for i, t := range ts {
		names[i] = t.Name()
	}
	return names
}

// reservedPaths are the daemon's own routes besides the API's /v1/….
var reservedPaths = []string{"/healthz", "/readyz", "/metrics", slackui.Path}

// checkRoute refuses a route of the program's under the API's paths, or
// one mine (the program's routes so far) does not take; else adds it to
// mine.
func checkRoute(mine *http.ServeMux, pattern string) error {
	if p := routePath(pattern); p == "/v1" || strings.HasPrefix(p, "/v1/") || slices.Contains(reservedPaths, p) {
		return fmt.Errorf("daemon: route %q: %s is the daemon's (the API's /v1/…, %s); serve yours elsewhere",
			pattern, p, strings.Join(reservedPaths, ", "))
	}
	if err := httpapi.TryHandle(mine, pattern, http.NotFoundHandler()); err != nil {
		return fmt.Errorf("daemon: route %q: %w", pattern, err)
	}
	return nil
}

// routePath is the path of a ServeMux pattern, "[METHOD ][HOST]/PATH".
func routePath(pattern string) string {
	p := pattern
	if i := strings.IndexAny(p, " \t"); i >= 0 {
		p = strings.TrimLeft(p[i:], " \t")
	}
	if j := strings.IndexByte(p, '/'); j >= 0 {
		return p[j:]
	}
	return ""
}

// checkHTTPTools builds the HTTP tools' configuration once to see it
// taken: the allow-lists, the timeouts and the secret headers' file.
func checkHTTPTools(cfg *Config) error {
	headers, err := hostHeaders(cfg.HTTPTools.HostHeadersFile)
	if err != nil {
		return err
	}
	if _, err := builtinTools(httpConfig(cfg, headers), nil, nil); err != nil {
		return &ConfigError{err}
	}
	return nil
}

// checkStateDir refuses an embedded cluster's state directory that is a
// file, or lies under one: no cluster could live there.
func checkStateDir(cfg *Config) error {
	if cfg.Database.URL != "" {
		return nil
	}
	dir := cfg.Database.StateDir
	if dir == "" {
		var err error
		if dir, err = pgembed.DefaultStateDir(); err != nil {
			return &ConfigError{err}
		}
	}
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, syscall.ENOTDIR):
		return &ConfigError{fmt.Errorf("%s %s: a part of the path is a file, not a directory",
			setting("Database.StateDir", "--state-dir or AGENTLEDGER_STATE_DIR"), dir)}
	case err == nil && !fi.IsDir():
		return &ConfigError{fmt.Errorf("%s %s: a file, not a directory", setting("Database.StateDir", "--state-dir or AGENTLEDGER_STATE_DIR"), dir)}
	}
	return nil
}
