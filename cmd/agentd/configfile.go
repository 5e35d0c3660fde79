package main

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/spf13/pflag"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/daemon"
	"github.com/agentledger/agentledger/flow"
	"github.com/agentledger/agentledger/grants"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/mcptools"
	"github.com/agentledger/agentledger/tenants"
)

// applyFile sets, from the TOML file at path, every setting that neither a
// flag nor the environment set. Keys are flag names (underscores allowed
// for dashes); values are strings, numbers, booleans or, for lists, arrays
// of strings. Secrets have no keys: the LLM API key and the Slack token
// come from the environment (or the Slack token file) only.
func applyFile(fs *pflag.FlagSet, getenv func(string) string, path string) error {
	var raw map[string]any
	if _, err := decodeFile(path, &raw); err != nil {
		return err
	}
	byFlag := map[string]setting{}
	for _, s := range settings {
		byFlag[s.flag] = s
	}
	keys := make([]string, 0, len(raw))
	for k := range raw {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if k == mcpServerKey || k == grantKey || k == limitKey || k == shareKey || k == compensationKey {
			continue // tables, read by tablesFromFile
		}
		name := strings.ReplaceAll(k, "_", "-")
		s, ok := byFlag[name]
		switch {
		case !ok:
			return fmt.Errorf("config file %s: unknown setting %q (the keys are agentd's flag names: see agentd --help)", path, k)
		case name == "config":
			return fmt.Errorf("config file %s: %q cannot name another config file", path, k)
		case fs.Changed(name) || getenv(s.env) != "":
			continue // flags and the environment win
		}
		v, err := fileValue(raw[k])
		if err != nil {
			return fmt.Errorf("config file %s: %s: %w", path, k, err)
		}
		f := fs.Lookup(name).Value.(*value)
		f.v, f.from = v, fmt.Sprintf("%s: %s", path, k)
	}
	return nil
}

// fileValue is a TOML value as the flag would spell it.
func fileValue(v any) (string, error) {
	switch x := v.(type) {
	case string:
		return x, nil
	case int64:
		return strconv.FormatInt(x, 10), nil
	case bool:
		return strconv.FormatBool(x), nil
	case []any:
		parts := make([]string, 0, len(x))
		for _, e := range x {
			s, ok := e.(string)
			if !ok {
				return "", fmt.Errorf("a list must hold strings, not %T", e)
			}
			parts = append(parts, s)
		}
		return strings.Join(parts, ","), nil
	case map[string]any:
		// Not echoed: a table could hold what belongs in a string, as a
		// database URL with its password.
		return "", errors.New("a table is not a value; use a string, a whole number, true/false or a list of strings")
	}
	return "", fmt.Errorf("%v is a %T; use a string, a whole number, true/false or a list of strings", v, v)
}

// mcpServerKey holds the MCP servers: an array of tables.
const mcpServerKey = "mcp_server"

// grantKey holds the tenants' grants: a table of tables by tenant.
const grantKey = "grant"

// limitKey holds the fleet-wide rate limits: an array of tables.
const limitKey = "limit"

// fileLimit is one [[limit]] table.
type fileLimit struct {
	Target          string `toml:"target"`
	Rate            string `toml:"rate"`
	Burst           *int   `toml:"burst"`
	Concurrency     *int   `toml:"concurrency"`
	Tokens          string `toml:"tokens"`
	BreakerFailures *int   `toml:"breaker_failures"`
	BreakerWindow   string `toml:"breaker_window"`
	BreakerCooldown string `toml:"breaker_cooldown"`
}

// Defaults of a [[limit]] table's breaker_window and breaker_cooldown.
const (
	defaultBreakerWindow   = time.Minute
	defaultBreakerCooldown = 30 * time.Second
)

// fileMCPServer is one [[mcp_server]] table.
type fileMCPServer struct {
	Name        string            `toml:"name"`
	Command     []string          `toml:"command"`
	URL         string            `toml:"url"`
	HeadersFile string            `toml:"headers_file"`
	Env         map[string]string `toml:"env"`
	EnvFiles    map[string]string `toml:"env_files"`
	Classes     map[string]string `toml:"classes"`
	// ApproveDestructive gates the server's destructive tools on a
	// person's approval (daemon.MCPServer.ApproveDestructive).
	ApproveDestructive bool `toml:"approve_destructive"`
}

// fileTables are the tables of the config file, read in one decode:
//
//	[[mcp_server]]
//	name = "shop"
//	command = ["shop-mcp", "--stdio"]       # or url = "https://…/mcp" and headers_file = "…"
//	env = { SHOP_REGION = "eu" }            # with a command: over the minimal environment
//	env_files = { SHOP_TOKEN = "/etc/agentledger/shop-token" } # secrets: a file's content
//	classes = { refund = "keyed" }          # overrides the tools' annotations
//	approve_destructive = true              # its destructive (unsafe) tools wait for a person's approval
//
//	[grant.acme]                            # stored when agentd starts, unless agentctl changed it since
//	kinds = ["steps"]                       # ["all"]: every kind (also when left out); []: none
//	tools = ["http_request"]
//	hosts = [{ url = "https://api.example.com", secret_headers = true }]
//
//	[[limit]]                               # stored when agentd starts
//	target = "slack-channel:*"              # any of the parts below, at least one
//	rate = "1/s"                            # N/s or N/min
//	burst = 1                               # default 1, with rate
//	concurrency = 5                         # calls in flight across the fleet
//	tokens = "90000/min"                    # model targets: tokens per minute (or /s)
//	breaker_failures = 5                    # failed calls within the window open the breaker
//	breaker_window = "60s"                  # default 60s, with breaker_failures
//	breaker_cooldown = "30s"                # default 30s: then one call probes
//
//	[[tenant_share]]                        # stored when agentd starts
//	tenant = "acme"
//	weight = 3                              # default 1
//	max_running = 20                        # default: no cap
//
//	[[compensation]]                        # agent tasks: how a call of a tool is undone
//	tool = "shop/charge"
//	undo = "shop/refund"
//	args = { charge = "${self.body.id}" }   # ${self.…}: the undone call's result
type fileTables struct {
	Servers []fileMCPServer          `toml:"mcp_server"`
	Grants  map[string]*grants.Grant `toml:"grant"`
	Limits  []fileLimit              `toml:"limit"`
	Shares  []fileShare              `toml:"tenant_share"`

	Compensations []fileCompensation `toml:"compensation"`
}

// tablesFromFile reads the MCP servers, the grants and the limits of
// the config file into c, naming the file and the setting at fault.
func tablesFromFile(path string, c *daemon.Config) error {
	var err error
	if c.MCPServers, c.Policy.Grants, err = serversAndGrants(path); err != nil {
		return err
	}
	if c.Policy.Limits, err = limitsFromFile(path); err != nil {
		return err
	}
	if c.Policy.TenantShares, err = sharesFromFile(path); err != nil {
		return err
	}
	c.Policy.Compensations, err = compensationsFromFile(path)
	return err
}

// limitsFromFile reads and checks the [[limit]] tables.
func limitsFromFile(path string) ([]flow.Limit, error) {
	var f fileTables
	if _, err := decodeFile(path, &f); err != nil {
		return nil, err
	}
	out := make([]flow.Limit, 0, len(f.Limits))
	for i, fl := range f.Limits {
		l, err := fl.limit()
		if err == nil && slices.ContainsFunc(out, func(o flow.Limit) bool { return o.Target == l.Target }) {
			err = agentledger.Invalid("target", "%s has another [[limit]] table", l.Target)
		}
		if err != nil {
			return nil, fmt.Errorf("config file %s: limit[%d] (target %q): %w", path, i, fl.Target, err)
		}
		out = append(out, l)
	}
	return out, nil
}

// limit checks one [[limit]] table; errors name its key at fault.
func (fl *fileLimit) limit() (flow.Limit, error) {
	l := flow.Limit{Target: fl.Target, Source: flow.SourceConfig}
	if fl.Rate == "" && fl.Concurrency == nil && fl.Tokens == "" && fl.BreakerFailures == nil {
		if fl.BreakerWindow != "" || fl.BreakerCooldown != "" {
			return l, agentledger.Invalid("breaker_failures", "a breaker needs breaker_failures (breaker_window and breaker_cooldown default to %s and %s)",
				defaultBreakerWindow, defaultBreakerCooldown)
		}
		return l, agentledger.Invalid("", "a limit needs at least one of rate, concurrency, tokens, breaker_failures")
	}
	if fl.Rate != "" {
		r, err := flow.ParseRate(fl.Rate)
		if err != nil {
			return l, err
		}
		l.Rate, l.Burst = r, 1
		if fl.Burst != nil {
			l.Burst = *fl.Burst
		}
		if l.Burst < 1 {
			return l, agentledger.Invalid("burst", "%d must be at least 1", l.Burst)
		}
	} else if fl.Burst != nil {
		return l, agentledger.Invalid("burst", "a burst needs a rate")
	}
	if c := fl.Concurrency; c != nil {
		if *c < 1 || *c > flow.MaxConcurrency {
			return l, agentledger.Invalid("concurrency", "%d must be 1..%d calls in flight", *c, flow.MaxConcurrency)
		}
		l.Concurrency = *c
	}
	if fl.Tokens != "" {
		r, err := flow.ParseRate(fl.Tokens)
		if err != nil { // ParseRate names the field "rate"
			var ie *agentledger.InvalidError
			if errors.As(err, &ie) {
				return l, agentledger.Invalid("tokens", "%s", ie.Problem)
			}
			return l, err
		}
		l.Tokens = r
	}
	switch {
	case fl.BreakerFailures != nil:
		b, err := fl.breaker()
		if err != nil {
			return l, err
		}
		l.Breaker = b
	case fl.BreakerWindow != "":
		return l, agentledger.Invalid("breaker_window", "a breaker needs breaker_failures")
	case fl.BreakerCooldown != "":
		return l, agentledger.Invalid("breaker_cooldown", "a breaker needs breaker_failures")
	}
	if err := l.Check(); err != nil {
		var ie *agentledger.InvalidError
		if errors.As(err, &ie) && ie.Field == "breaker" {
			return l, agentledger.Invalid("breaker_failures", "%s", ie.Problem)
		}
		return l, err
	}
	return l, nil
}

// breaker checks the breaker keys of a [[limit]] table.
func (fl *fileLimit) breaker() (*flow.Breaker, error) {
	b := &flow.Breaker{Failures: *fl.BreakerFailures, Window: defaultBreakerWindow, Cooldown: defaultBreakerCooldown}
	if b.Failures < 1 || b.Failures > flow.MaxN {
		return nil, agentledger.Invalid("breaker_failures", "%d must be 1..%d failed calls", b.Failures, flow.MaxN)
	}
	for _, d := range []struct {
		key, text string
		to        *time.Duration
	}{{"breaker_window", fl.BreakerWindow, &b.Window}, {"breaker_cooldown", fl.BreakerCooldown, &b.Cooldown}} {
		if d.text == "" {
			continue
		}
		v, err := time.ParseDuration(d.text)
		if err != nil {
			return nil, agentledger.Invalid(d.key, "%q is not a duration such as \"60s\" or \"5m\"", d.text)
		}
		if v < time.Millisecond || v > flow.MaxBreakerWindow {
			return nil, agentledger.Invalid(d.key, "%s must be 1ms..%s", d.text, flow.MaxBreakerWindow)
		}
		*d.to = v
	}
	return b, nil
}

// decodeFile decodes the config file at path into v, its error naming
// the file. A number or a boolean where the setting is a string (rate =
// 5) is told to be written as one: the decoder's "destination has type
// string" does not say so.
func decodeFile(path string, v any) (toml.MetaData, error) {
	md, err := toml.DecodeFile(path, v)
	switch {
	case err != nil && strings.Contains(err.Error(), "destination has type string"):
		return md, fmt.Errorf("config file %s: %w: write the value as a string, in quotes (a rate as \"5/s\", a duration as \"30s\")", path, err)
	case err != nil:
		return md, fmt.Errorf("config file %s: %w", path, err)
	}
	return md, nil
}

// serversAndGrants reads the MCP servers and the grants of the config
// file, naming the file and the setting at fault.
func serversAndGrants(path string) ([]daemon.MCPServer, map[string]*grants.Grant, error) {
	var f fileTables
	md, err := decodeFile(path, &f)
	if err != nil {
		return nil, nil, err
	}
	for _, k := range md.Undecoded() {
		switch {
		case len(k) > 1 && k[0] == mcpServerKey:
			return nil, nil, fmt.Errorf("config file %s: unknown setting %q of an MCP server (name, command, url, headers_file, env, env_files, classes, approve_destructive)", path, k.String())
		case len(k) > 2 && k[0] == grantKey:
			return nil, nil, fmt.Errorf("config file %s: unknown setting %q of a grant (all, kinds, tools, hosts, channels, models, max_tokens, priority_floor, decide, approve)", path, k.String())
		case len(k) > 1 && k[0] == limitKey:
			return nil, nil, fmt.Errorf("config file %s: unknown setting %q of a limit (target, rate, burst, concurrency, tokens, breaker_failures, breaker_window, breaker_cooldown)", path, k.String())
		case len(k) > 1 && k[0] == shareKey:
			return nil, nil, fmt.Errorf("config file %s: unknown setting %q of a tenant share (tenant, weight, max_running)", path, k.String())
		case len(k) > 1 && k[0] == compensationKey:
			return nil, nil, fmt.Errorf("config file %s: unknown setting %q of a compensation (tool, undo, args)", path, k.String())
		}
	}
	for tenant, g := range f.Grants {
		err := tenants.CheckName(tenant)
		if err == nil {
			err = g.KindsFromConfig(md.IsDefined(grantKey, tenant, "kinds"))
		}
		if err == nil {
			err = g.Validate()
		}
		if err != nil {
			return nil, nil, fmt.Errorf("config file %s: grant.%s: %w", path, tenant, err)
		}
	}
	servers, err := mcpServers(path, f.Servers)
	return servers, f.Grants, err
}

// mcpServers checks the [[mcp_server]] tables.
func mcpServers(path string, in []fileMCPServer) ([]daemon.MCPServer, error) {
	out := make([]daemon.MCPServer, 0, len(in))
	for i, s := range in {
		srv := daemon.MCPServer{Name: s.Name, Command: s.Command, URL: s.URL, HeadersFile: s.HeadersFile, Env: s.Env, EnvFiles: s.EnvFiles,
			ApproveDestructive: s.ApproveDestructive}
		if err := s.checkEnv(); err != nil {
			return nil, fmt.Errorf("config file %s: mcp_server[%d] %s: %w", path, i, s.Name, err)
		}
		for tool, class := range s.Classes {
			c := ledger.Class(class)
			if !mcptools.CallClass(c) {
				return nil, fmt.Errorf("config file %s: mcp_server[%d] %s: classes.%s: %q is not pure, keyed or unsafe", path, i, s.Name, tool, class)
			}
			if srv.Classes == nil {
				srv.Classes = map[string]ledger.Class{}
			}
			srv.Classes[tool] = c
		}
		out = append(out, srv)
	}
	return out, nil
}

// checkEnv checks a server's env and env_files: names an environment can
// hold, each given once, and only with a command. Errors name the
// variable, never its value.
func (s fileMCPServer) checkEnv() error {
	if s.URL != "" && (len(s.Env) > 0 || len(s.EnvFiles) > 0) {
		return errors.New("env and env_files go with a command; a url server has no environment")
	}
	for _, name := range slices.Sorted(maps.Keys(s.Env)) {
		if err := mcptools.CheckEnv(name, s.Env[name]); err != nil {
			return fmt.Errorf("env: %w", err)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(s.EnvFiles)) {
		if err := mcptools.CheckEnvName(name); err != nil {
			return fmt.Errorf("env_files: %w", err)
		}
		if s.EnvFiles[name] == "" {
			return fmt.Errorf("env_files: %s names no file", name)
		}
		if _, ok := s.Env[name]; ok {
			return fmt.Errorf("%s is in both env and env_files", name)
		}
	}
	return nil
}
