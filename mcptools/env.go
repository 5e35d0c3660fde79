package mcptools

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
)

// defaultEnvNames are the variables a command's server inherits unless
// its Env says otherwise: those the official MCP SDKs' stdio clients pass
// (getDefaultEnvironment: HOME, LOGNAME, PATH, SHELL, TERM, USER), a
// locale, and TMPDIR. Nothing else of this process's environment — a
// model's API key, a bot token, a database URL — reaches a third-party
// server, whose tools could hand it back to whoever may call them.
var defaultEnvNames = []string{"HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG", "LC_ALL", "LC_CTYPE", "TMPDIR"}

// DefaultEnv is the environment Connect gives the server of a
// *mcp.CommandTransport whose exec.Cmd has no Env (where exec would pass
// this process's whole environment): this process's HOME, LOGNAME, PATH,
// SHELL, TERM, USER, LANG, LC_ALL, LC_CTYPE and TMPDIR, those that are
// set. A value starting with "()" (a shell function, as bash exports
// them) is left out, as the SDKs do. A Cmd's Env, when set, is the
// server's whole environment: build it with Env, and to pass everything
// say so with Env = os.Environ(). The result is never nil: a nil Env
// would inherit everything.
func DefaultEnv() []string {
	out := make([]string, 0, len(defaultEnvNames))
	for _, name := range defaultEnvNames {
		if v, ok := os.LookupEnv(name); ok && !strings.HasPrefix(v, "()") {
			out = append(out, name+"="+v)
		}
	}
	return out
}

// Env is base (DefaultEnv when nil) with vars set over it, for a
// command's exec.Cmd.Env. It checks every name and value; its errors name
// the variable, never the value, which may be a secret.
func Env(base []string, vars map[string]string) ([]string, error) {
	if base == nil {
		base = DefaultEnv()
	}
	for _, name := range slices.Sorted(maps.Keys(vars)) {
		if err := CheckEnv(name, vars[name]); err != nil {
			return nil, err
		}
	}
	out := make([]string, 0, len(base)+len(vars))
	for _, kv := range base {
		name, _, _ := strings.Cut(kv, "=")
		if _, over := vars[name]; !over {
			out = append(out, kv)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(vars)) {
		out = append(out, name+"="+vars[name])
	}
	return out, nil
}

// CheckEnvName refuses a name no environment can hold: empty, or with '='
// or a NUL byte in it.
func CheckEnvName(name string) error {
	switch {
	case name == "":
		return errors.New("an environment variable needs a name")
	case strings.ContainsRune(name, '='):
		return fmt.Errorf("environment variable %q: a name cannot hold '='", name)
	case strings.ContainsRune(name, 0):
		return fmt.Errorf("environment variable %q: a name cannot hold a NUL byte", name)
	}
	return nil
}

// CheckEnv checks a variable's name and value (no NUL byte); its error
// names the variable, never the value.
func CheckEnv(name, value string) error {
	if err := CheckEnvName(name); err != nil {
		return err
	}
	if strings.ContainsRune(value, 0) {
		return fmt.Errorf("environment variable %s: a value cannot hold a NUL byte", name)
	}
	return nil
}
