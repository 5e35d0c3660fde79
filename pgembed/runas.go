package pgembed

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// DefaultRunAsUser is the OS user the server runs as when the caller is root.
const DefaultRunAsUser = "postgres"

// runAs is the unprivileged user the server runs as when we are root; nil means "ourselves".
type runAs struct {
	name   string
	uid    int
	gid    int
	groups []int
}

// lookupRunAs resolves name to uid, gid and supplementary groups.
func lookupRunAs(name string) (*runAs, error) {
	if name == "" {
		name = DefaultRunAsUser
	}
	u, err := user.Lookup(name)
	if err != nil {
		return nil, fmt.Errorf("pgembed: running as root, so the PostgreSQL server must run as an unprivileged user, "+
			"but user %q does not exist (%v); create it (the postgresql package does) or set RunAsUser", name, err)
	}
	r := &runAs{name: name}
	if r.uid, err = strconv.Atoi(u.Uid); err != nil {
		return nil, fmt.Errorf("pgembed: user %q: bad uid %q", name, u.Uid)
	}
	if r.gid, err = strconv.Atoi(u.Gid); err != nil {
		return nil, fmt.Errorf("pgembed: user %q: bad gid %q", name, u.Gid)
	}
	if r.uid == 0 {
		return nil, fmt.Errorf("pgembed: PostgreSQL refuses to run as root; RunAsUser %q has uid 0", name)
	}
	if gids, err := u.GroupIds(); err == nil {
		for _, g := range gids {
			if n, err := strconv.Atoi(g); err == nil {
				r.groups = append(r.groups, n)
			}
		}
	}
	return r, nil
}

// inGroup reports whether gid is the user's primary or a supplementary group.
func (r *runAs) inGroup(gid int) bool {
	return gid == r.gid || slices.Contains(r.groups, gid)
}

// chown gives path to the user; a no-op when r is nil.
func (r *runAs) chown(path string) error {
	if r == nil {
		return nil
	}
	if err := os.Chown(path, r.uid, r.gid); err != nil {
		return fmt.Errorf("pgembed: %w", err)
	}
	return nil
}

// serverUID is the uid the server runs as.
func (r *runAs) serverUID() int {
	if r == nil {
		return os.Geteuid()
	}
	return r.uid
}

// describe names the server user for messages.
func (r *runAs) describe() string {
	if r == nil {
		return fmt.Sprintf("the current user (uid %d)", os.Geteuid())
	}
	return fmt.Sprintf("user %q (uid %d)", r.name, r.uid)
}

// command builds a command that runs as the user, in its own process group
// (so a terminal's Ctrl-C reaches only us), with serverEnv of ours.
func (r *runAs) command(ctx context.Context, dir, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if r != nil {
		groups := make([]uint32, len(r.groups))
		for i, g := range r.groups {
			groups[i] = uint32(g)
		}
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: uint32(r.uid), Gid: uint32(r.gid), Groups: groups}
	}
	cmd.Env = serverEnv(os.Environ())
	return cmd
}

// serverEnv is what of environ the server's programs get: what they need
// to run and speak the user's locale, and nothing else. Our own secrets
// (the model's key, the Slack token) must not reach them: a program is
// dumpable again once executed, so its /proc/<pid>/environ is readable by
// every process of its user, MCP servers among them. PG* variables would
// point initdb and pg_ctl at another server, or change the cluster.
// LOCPATH is where the C library finds locales built apart from the
// system's (localedef), for a server that speaks one of them.
func serverEnv(environ []string) []string {
	env := []string{}
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		switch {
		case name == "PATH", name == "HOME", name == "USER", name == "LOGNAME", name == "TMPDIR",
			name == "TZ", name == "LANG", strings.HasPrefix(name, "LC_"), name == "LOCPATH", name == "LD_LIBRARY_PATH":
			env = append(env, kv)
		}
	}
	return env
}
