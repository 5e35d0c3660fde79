package database

import (
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
)

// A refused URL says why when the reason is a setting's, and never quotes
// what could be the password.
func TestURLProblemSaysWhyWithoutThePassword(t *testing.T) {
	t.Parallel()
	for url, want := range map[string]string{
		"postgres://u:s3cr3t@127.0.0.1:5432/db?sslmode=bogus":    "sslmode is invalid",
		"postgres://u:s3cr3t@127.0.0.1:port/db":                  "invalid port",
		"postgres://u:s3cr3t@127.0.0.1:5432/db?pool_max_conns=x": "cannot parse pool_max_conns",
		"postgres://u:p%zzs3cr3t@127.0.0.1:5432/db":              "expected postgres://user:password@host:port/dbname",
	} {
		_, err := pgxpool.ParseConfig(url)
		if err == nil {
			t.Fatalf("%s: parsed", url)
		}
		got := urlProblem(err)
		if !strings.Contains(got, want) || strings.Contains(got, "s3cr3t") || strings.Contains(got, "zz") {
			t.Errorf("%s: %q, want it to say %q and nothing of the password", url, got, want)
		}
	}
}
