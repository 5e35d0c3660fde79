package pgembed

import (
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
)

// connInfo is the content of conn.json: what a client such as pg_dump
// needs to connect to the cluster.
type connInfo struct {
	Host     string `json:"host"`
	Port     int    `json:"port"`
	User     string `json:"user"`
	Password string `json:"password"`
	Database string `json:"database"`
}

// loopback is the only address the server listens on.
const loopback = "127.0.0.1"

// complete fills what a conn.json written by an older version lacks (the
// host and database, which were always these), reporting whether it did.
func (ci *connInfo) complete() bool {
	old := ci.Host == "" || ci.Database == ""
	if ci.Host == "" {
		ci.Host = loopback
	}
	if ci.Database == "" {
		ci.Database = DatabaseName
	}
	return old
}

// readConnInfo reads conn.json.
func readConnInfo(path string) (connInfo, error) {
	var ci connInfo
	b, err := os.ReadFile(path)
	if err != nil {
		return ci, err
	}
	if err := json.Unmarshal(b, &ci); err != nil {
		return ci, fmt.Errorf("pgembed: %s: %w", path, err)
	}
	if ci.Port <= 0 || ci.User == "" || ci.Password == "" {
		return ci, fmt.Errorf("pgembed: %s is incomplete", path)
	}
	return ci, nil
}

// writeConnInfo replaces conn.json atomically, with mode 0600.
func writeConnInfo(path string, ci connInfo) error {
	b, err := json.MarshalIndent(ci, "", "  ")
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".conn-*.json")
	if err != nil {
		return fmt.Errorf("pgembed: %w", err)
	}
	tmp := f.Name()
	defer os.Remove(tmp) // no-op after a successful rename
	_, err = f.Write(append(b, '\n'))
	if err == nil {
		err = f.Chmod(0o600)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		return fmt.Errorf("pgembed: writing %s: %w", path, err)
	}
	return nil
}

// url is the connection URL for database, with the superuser's password.
func (ci connInfo) url(database string) string {
	u := url.URL{
		Scheme:   "postgres",
		User:     url.UserPassword(ci.User, ci.Password),
		Host:     net.JoinHostPort(loopback, strconv.Itoa(ci.Port)),
		Path:     "/" + database,
		RawQuery: "sslmode=disable",
	}
	return u.String()
}
