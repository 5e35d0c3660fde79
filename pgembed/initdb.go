package pgembed

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// SuperUser is the name of the cluster's superuser, which URL connects as.
const SuperUser = "agentledger"

// DatabaseName is the database Start creates in a new cluster.
const DatabaseName = "agentledger"

// initCluster runs initdb into a scratch directory and, on success, records
// conn.json and renames the scratch directory to pgdata, so a pgdata with a
// PG_VERSION file is always a complete cluster.
func (c *Cluster) initCluster(ctx context.Context) error {
	initDir := c.layout.initDir()
	if err := os.RemoveAll(initDir); err != nil {
		return fmt.Errorf("pgembed: removing leftovers of an earlier initdb: %w", err)
	}
	if old, _ := filepath.Glob(filepath.Join(c.layout.root, ".pwfile-*")); len(old) > 0 {
		for _, p := range old {
			os.Remove(p)
		}
	}
	if err := os.Mkdir(initDir, 0o700); err != nil {
		return fmt.Errorf("pgembed: %w", err)
	}
	if err := c.runAs.chown(initDir); err != nil {
		os.RemoveAll(initDir)
		return err
	}

	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return fmt.Errorf("pgembed: generating password: %w", err)
	}
	password := hex.EncodeToString(raw)
	pwFile, err := c.writePasswordFile(password)
	if err != nil {
		os.RemoveAll(initDir)
		return err
	}

	args := []string{"-D", initDir, "-U", SuperUser, "--pwfile=" + pwFile,
		"--auth=scram-sha-256", "-E", "UTF8", "--locale=C"}
	help, _ := c.run(ctx, "initdb", "--help")
	if bytes.Contains(help, []byte("--no-instructions")) {
		args = append(args, "--no-instructions")
	}
	if strings.EqualFold(c.settings["fsync"], "off") {
		args = append(args, "--no-sync") // the caller does not want durability anyway
	}
	out, err := c.run(ctx, "initdb", args...)
	os.Remove(pwFile)
	if err != nil {
		os.RemoveAll(initDir)
		return fmt.Errorf("pgembed: initdb for %s failed: %v; last lines of its output:\n%s",
			c.DataDir(), err, tail(string(out), tailLineCount))
	}

	port, err := freePort()
	if err != nil {
		os.RemoveAll(initDir)
		return err
	}
	c.conn = connInfo{Host: loopback, Port: port, User: SuperUser, Password: password, Database: DatabaseName}
	if err := writeConnInfo(c.layout.connFile(), c.conn); err != nil {
		os.RemoveAll(initDir)
		return err
	}
	if err := os.Rename(initDir, c.DataDir()); err != nil {
		os.RemoveAll(initDir)
		return fmt.Errorf("pgembed: %w", err)
	}
	// Said plainly: a mistyped state directory makes a new, empty cluster.
	attrs := []any{"state_dir", c.layout.root, "port", port, "version", c.version}
	if others := OtherClusters(c.layout.root); len(others) > 0 {
		attrs = append(attrs, "existing_clusters", strings.Join(others, ", "))
	}
	c.log.Info("initialised a new PostgreSQL cluster: the state directory held none", attrs...)
	return nil
}

// writePasswordFile writes the password to a temporary file the server user can read.
func (c *Cluster) writePasswordFile(password string) (string, error) {
	f, err := os.CreateTemp(c.layout.root, ".pwfile-*")
	if err != nil {
		return "", fmt.Errorf("pgembed: %w", err)
	}
	_, err = f.WriteString(password + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = c.runAs.chown(f.Name())
	}
	if err != nil {
		os.Remove(f.Name())
		return "", fmt.Errorf("pgembed: writing password file: %w", err)
	}
	return f.Name(), nil
}
