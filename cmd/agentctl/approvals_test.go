package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentledger/agentledger/approvals"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/internal/test/testenv"
)

// approve on a terminal shows the call and asks: an answer other than yes
// decides nothing; yes approves, recorded as --as via agentctl.
func TestApproveAsks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := testenv.New(t)
	url := e.DB.Config().ConnString()
	task := e.Enqueue(claims.EnqueueParams{Kind: "steps"})
	store := approvals.NewStore(e.DB)
	r, _, err := store.Ensure(ctx, approvals.Request{TaskID: task.ID, Generation: task.Generation, Step: "tool/0",
		Tenant: task.Tenant, Tool: "http_request", Class: "keyed",
		Call: json.RawMessage(`{"method":"POST","url":"https://pay.example/refunds"}`), OnTimeout: "deny"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	id := strconv.FormatInt(r.ID, 10)
	tty := os.ModeDevice | os.ModeCharDevice
	approve := func(answer string) (int, string, string) {
		var stdout, stderr bytes.Buffer
		code := run(ctx, []string{"--database-url", url, "approve", id, "--as", "carol"},
			fakeStdin{strings.NewReader(answer), tty}, &stdout, &stderr)
		return code, stdout.String(), stderr.String()
	}

	code, out, errOut := approve("n\n")
	if code != 1 || !strings.Contains(out, "Call:") || !strings.Contains(errOut, "Approve request "+id+": http_request POST https://pay.example/refunds? [y/N] ") ||
		!strings.Contains(errOut, "not confirmed: approval request "+id+" still waits for a decision") {
		t.Fatalf("answered no: exit %d\n%s\n%s", code, out, errOut)
	}
	if got, err := store.Get(ctx, "", r.ID); err != nil || got.State != approvals.Pending {
		t.Fatalf("after no: %+v %v", got, err)
	}

	code, out, errOut = approve("y\n")
	if code != 0 || !strings.Contains(out, "approval request "+id+" approved by carol") {
		t.Fatalf("answered yes: exit %d\n%s\n%s", code, out, errOut)
	}
	if got, err := store.Get(ctx, "", r.ID); err != nil || got.State != approvals.Approved || got.DecidedBy != "carol" || got.DecidedVia != "agentctl" {
		t.Fatalf("after yes: %+v %v", got, err)
	}
}
