package database_test

import (
	"context"
	"net"
	"net/url"
	"strings"
	"testing"

	"github.com/agentledger/agentledger/database"
	"github.com/agentledger/agentledger/internal/test/testdb"
)

// A multi-host URL (a failover pair) whose first host is down: Open
// connects to the next host that takes writes, and describes the database
// by every host, without the password.
func TestOpenMultiHostFirstDown(t *testing.T) {
	t.Parallel()
	u, err := url.Parse(testdb.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := ln.Addr().String()
	ln.Close() // nothing listens there now
	pass, _ := u.User.Password()
	q := u.Query()
	q.Set("target_session_attrs", "read-write")
	u.RawQuery = q.Encode()
	raw := strings.Replace(u.String(), "@"+u.Host, "@"+down+","+u.Host, 1)

	db, err := database.Open(context.Background(), database.Config{URL: raw})
	if err != nil {
		t.Fatalf("Open(%s): %v", database.Redact(raw), err)
	}
	defer db.Close(context.Background())
	var readOnly string
	if err := db.Pool.QueryRow(context.Background(), "SHOW transaction_read_only").Scan(&readOnly); err != nil || readOnly != "off" {
		t.Fatalf("transaction_read_only = %q, %v; want a writable session", readOnly, err)
	}
	desc := db.String()
	if strings.Contains(desc, pass) || !strings.Contains(desc, down+","+u.Host) || !strings.Contains(desc, "target_session_attrs=read-write") {
		t.Errorf("description %q: want both hosts and target_session_attrs, no password", desc)
	}
}
