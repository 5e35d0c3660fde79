package tui

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/approvals"
	"github.com/agentledger/agentledger/waits"
)

// More waits, or pending requests, than a page: n shows the next page,
// read after the last shown, and p the one before; a page key that has
// nowhere to go says so.
func TestListsPageOnAndBack(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		view, key, count string
		size             int
		fill             func(s *fakeStore, n int)
		read             string // the store's call for the second page
	}{
		{"waits", "W", "waits", waitsShown, func(s *fakeStore, n int) {
			for i := 1; i <= n; i++ {
				s.waits = append(s.waits, Wait{Wait: waits.Wait{ID: int64(i), TaskID: 1, Generation: 1, Step: fmt.Sprintf("tool/%d", i),
					Tenant: "acme", Kind: waits.KindTimer, CreatedAt: epoch, Deadline: epoch.Add(time.Duration(i) * time.Minute), State: waits.Waiting}})
			}
		}, fmt.Sprintf("waiting %d after %d", waitsShown, waitsShown)},
		{"approvals", "a", "approvals pending", approvalsShown, func(s *fakeStore, n int) {
			for i := 1; i <= n; i++ {
				s.requests = append(s.requests, approvals.Request{ID: int64(i), TaskID: 1, Generation: 1, Step: fmt.Sprintf("tool/%d", i),
					Tenant: "acme", Tool: "http_request", Class: "keyed", State: approvals.Pending, OnTimeout: "deny",
					Call: json.RawMessage(`{"method":"POST","url":"https://pay.example/charges"}`), RequestedAt: epoch.Add(time.Duration(i) * time.Second),
					ExpiresAt: epoch.Add(time.Hour)})
			}
		}, fmt.Sprintf("pending-approvals %d after %d", approvalsShown, approvalsShown)},
	} {
		t.Run(c.view, func(t *testing.T) {
			t.Parallel()
			n := c.size + 3
			store := newFakeStore(1, epoch)
			store.tasks[0].State = agentledger.StateWaiting
			c.fill(store, n)
			d := newDriver(t, store, Options{}, 110, 24)
			first := func(v string) string { // the id of the first row under the header
				lines := strings.Split(v, "\n")
				for i, l := range lines {
					if strings.HasPrefix(strings.TrimSpace(l), "ID ") && i+1 < len(lines) {
						return strings.Fields(lines[i+1])[0]
					}
				}
				return ""
			}
			d.keys(c.key)
			full := fmt.Sprintf("page 1, %d shown · n next", c.size)
			if v := d.view(); !strings.Contains(v, fmt.Sprintf("%d %s", n, c.count)) || !strings.Contains(v, full) || first(v) != "1" {
				t.Fatalf("the first page:\n%s", v)
			}
			d.keys("p")
			if v := d.view(); !strings.Contains(v, "already on the first page") {
				t.Errorf("p on the first page says nothing:\n%s", v)
			}
			d.keys("G", "n")
			v := d.view()
			if !strings.Contains(v, "page 2, 3 shown · p previous") || first(v) != fmt.Sprint(c.size+1) {
				t.Fatalf("the second page:\n%s", v)
			}
			if !slices.Contains(store.callLog(), c.read) {
				t.Errorf("the second page was not read after the first's last (%q): %q", c.read, store.callLog())
			}
			d.keys("n")
			if v := d.view(); !strings.Contains(v, "already on the last page") || first(v) != fmt.Sprint(c.size+1) {
				t.Errorf("n on the last page:\n%s", v)
			}
			d.keys("p")
			if v := d.view(); !strings.Contains(v, full) || first(v) != "1" {
				t.Errorf("back on the first page:\n%s", v)
			}
		})
	}
}
