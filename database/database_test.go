package database

import (
	"context"
	"strings"
	"testing"
)

func TestRedact(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"postgres://bob:s3cret@db:5432/app?sslmode=disable":                           "postgres://bob:xxxxx@db:5432/app?sslmode=disable",
		"postgres://bob@db/app":                                                       "postgres://bob@db/app",
		"host=db user=bob password=s3cret dbname=app":                                 "host=db user=bob password=xxxxx dbname=app",
		"postgres://bob:s3cret@db1:5432,db2:5432/app?target_session_attrs=read-write": "postgres://bob:xxxxx@db1:5432,db2:5432/app?target_session_attrs=read-write",
		"postgres://bob:s3cret@db1,db2/app":                                           "postgres://bob:xxxxx@db1,db2/app",
		"bob:s3cret@localhost:5432/db":                                                "bob:xxxxx@localhost:5432/db",
		"postgres://localhost/db?password=s3cret&port=abc":                            "postgres://localhost/db?password=xxxxx&port=abc",
	} {
		if got := Redact(in); got != want || strings.Contains(got, "s3cret") {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestOpenBadURLKeepsSecret(t *testing.T) {
	t.Parallel()
	_, err := Open(context.Background(), Config{URL: "postgres://bob:s3cret@db:notaport/app"})
	if err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("error %v: want an error without the password", err)
	}
}
