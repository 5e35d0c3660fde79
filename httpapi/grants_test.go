package httpapi_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentledger/agentledger/grants"
	"github.com/agentledger/agentledger/httpapi"
)

// lateGrants reads grants from a store set once the test database exists.
type lateGrants struct{ store *grants.Store }

func (l *lateGrants) For(ctx context.Context, tenant string) (*grants.Grant, error) {
	return l.store.For(ctx, tenant)
}

// grantedEnv is an API whose tenant acme has grant g, and acme's token.
func grantedEnv(t *testing.T, g *grants.Grant) (*env, string) {
	t.Helper()
	src := &lateGrants{}
	e := newEnv(t, httpapi.Config{Grants: src})
	src.store = grants.NewStore(e.db)
	token := e.tenant("acme")
	if err := src.store.Put(context.Background(), "acme", g); err != nil {
		t.Fatal(err)
	}
	return e, token
}

// A tenant may submit only the kinds its grant lists: another kind is a 403
// forbidden naming it, and nothing is queued.
func TestSubmitOutsideTheGrantIsForbidden(t *testing.T) {
	t.Parallel()
	e, token := grantedEnv(t, &grants.Grant{Kinds: []string{"echo"}})
	e.task(e.post("/v1/tasks", token, "k1", `{"kind":"echo"}`), http.StatusCreated)
	p := e.problem(e.post("/v1/tasks", token, "k2", `{"kind":"steps","payload":{"steps":[]}}`), http.StatusForbidden, "forbidden")
	if !strings.Contains(p.Detail, `tenant "acme" has no grant for kind "steps"`) {
		t.Errorf("detail %q", p.Detail)
	}
	if n := e.count(`SELECT count(*) FROM tasks WHERE kind = 'steps'`); n != 0 {
		t.Errorf("%d steps tasks queued", n)
	}
}

// No queue jumping through the API: a run_at in the past becomes now, and a
// priority more urgent than the tenant's floor is raised to it.
func TestSubmitCannotJumpTheQueue(t *testing.T) {
	t.Parallel()
	e, token := grantedEnv(t, &grants.Grant{PriorityFloor: 50})
	before := time.Now().Add(-time.Second) // the database's clock may trail ours a little
	task := e.task(e.post("/v1/tasks", token, "k1", `{"kind":"echo","priority":0,"run_at":"2001-01-01T00:00:00Z"}`), http.StatusCreated)
	if task.Priority != 50 || task.RunAt.Before(before) {
		t.Errorf("priority %d run_at %s: want 50 and now", task.Priority, task.RunAt)
	}
	later := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	task = e.task(e.post("/v1/tasks", token, "k2", `{"kind":"echo","priority":70,"run_at":"`+later.Format(time.RFC3339)+`"}`), http.StatusCreated)
	if task.Priority != 70 || !task.RunAt.Equal(later) {
		t.Errorf("priority %d run_at %s: want 70 and %s as asked", task.Priority, task.RunAt, later)
	}
}
