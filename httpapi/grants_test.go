package httpapi_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/agentledger/agentledger/grants"
	"github.com/agentledger/agentledger/httpapi"
)

// lateGrants reads grants from a store set once the test database exists.
type lateGrants struct{ store *grants.Store }

func (l *lateGrants) For(ctx context.Context, tenant string) (*grants.Grant, error) {
	return l.store.For(ctx, tenant)
}

// A tenant may submit only the kinds its grant lists: another kind is a 403
// forbidden naming it, and nothing is queued.
func TestSubmitOutsideTheGrantIsForbidden(t *testing.T) {
	t.Parallel()
	src := &lateGrants{}
	e := newEnv(t, httpapi.Config{Grants: src})
	src.store = grants.NewStore(e.db)
	token := e.tenant("acme")
	if err := src.store.Put(context.Background(), "acme", &grants.Grant{Kinds: []string{"echo"}}); err != nil {
		t.Fatal(err)
	}
	e.task(e.post("/v1/tasks", token, "k1", `{"kind":"echo"}`), http.StatusCreated)
	p := e.problem(e.post("/v1/tasks", token, "k2", `{"kind":"steps","payload":{"steps":[]}}`), http.StatusForbidden, "forbidden")
	if !strings.Contains(p.Detail, `tenant "acme" has no grant for kind "steps"`) {
		t.Errorf("detail %q", p.Detail)
	}
	if n := e.count(`SELECT count(*) FROM tasks WHERE kind = 'steps'`); n != 0 {
		t.Errorf("%d steps tasks queued", n)
	}
}
