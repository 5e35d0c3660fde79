package admit_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/admit"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/grants"
	"github.com/agentledger/agentledger/internal/test/testdb"
	"github.com/agentledger/agentledger/registry"
	"github.com/agentledger/agentledger/render"
)

// In a mixed fleet the door stores what a task needs of the pool that
// runs it, refuses a task no live pool can run — naming what each lacks —
// unless it is queued anyway, and reads then say what it waits for.
func TestDoorMatchesTasksToAMixedFleet(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	s := registry.New(db)
	for _, r := range []registry.Registration{
		{ID: "ticketing", Tools: map[string]json.RawMessage{"http_request": nil, "open_ticket": nil},
			Caps: []string{"tool:http_request", "tool:open_ticket"}},
		{ID: "demo", Tools: map[string]json.RawMessage{"http_request": nil},
			Caps: []string{"agent:2", "http_request@http://127.0.0.1:7450", "model", "tool:http_request"}},
	} {
		r.Host, r.PID, r.Queues, r.Kinds = "h", 1, []string{"default"}, []string{"steps", "agent"}
		if err := s.Register(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	admitted := func(kind, payload string, anyway bool) (claims.EnqueueParams, error) {
		return (&admit.Door{}).Admit(ctx, db, admit.Submission{Caller: admit.Operator, Unserved: anyway,
			Override: "submit with --allow-unserved", Params: claims.EnqueueParams{Kind: kind, Payload: []byte(payload)}})
	}
	for _, c := range []struct {
		kind, payload string
		needs         []string
	}{
		{"steps", `{"steps":[{"tool":"open_ticket","args":{}}]}`, []string{"tool:open_ticket"}},
		{"steps", `{"steps":[{"tool":"http_request","args":{"method":"POST","url":"http://127.0.0.1:7450/demo/charges"}}]}`,
			[]string{"http_request@http://127.0.0.1:7450"}},
		{"steps", `{"steps":[{"tool":"open_ticket","args":{}},{"tool":"http_request","args":{"method":"POST","url":"${steps.0.body.url}"}}]}`,
			[]string{"tool:open_ticket"}},
		{"agent", `{"prompt":"hi","tools":["http_request"]}`, []string{"agent:2", "model"}}, // http_request: every daemon's
		{"echo", `{}`, nil},
	} {
		p, err := admitted(c.kind, c.payload, false)
		if c.kind == "echo" {
			var ie *agentledger.InvalidError
			if !errors.As(err, &ie) || ie.Field != "kind" {
				t.Fatalf("an unserved kind: %v", err)
			}
			p, err = admitted(c.kind, c.payload, true)
		}
		if err != nil || !slices.Equal(p.Needs, c.needs) {
			t.Errorf("%s %s: needs %q (%v), want %q", c.kind, c.payload, p.Needs, err, c.needs)
		}
	}

	// Each pool has a part: none has both.
	both := `{"steps":[{"tool":"open_ticket","args":{}},{"tool":"http_request","args":{"method":"POST","url":"http://127.0.0.1:7450/x"}}]}`
	_, err := admitted("steps", both, false)
	var ie *agentledger.InvalidError
	want := "no live worker can run this task: demo lacks tool open_ticket; ticketing lacks http_request to http://127.0.0.1:7450; " +
		"submit with --allow-unserved to queue it for a worker that is not up yet"
	if !errors.As(err, &ie) || ie.Field != "payload" || ie.Problem != want {
		t.Fatalf("a task no pool can run: %v\nwant %s", err, want)
	}
	p, err := admitted("steps", both, true)
	if err != nil {
		t.Fatal(err)
	}
	r, err := claims.New(db).Enqueue(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	task := r.Task
	if err := s.ExplainWaits(ctx, task); err != nil {
		t.Fatal(err)
	}
	// What the closest pool lacks (a tie goes to the first by id).
	if want := "waiting for a daemon with tool open_ticket"; task.WaitReason != want {
		t.Fatalf("wait reason %q, want %q", task.WaitReason, want)
	}
}

// An agent task submitted now needs the agent loop of release 2
// (registry.CapAgent2), which words a result without an HTTP status as
// performed: an older agentd, which has a model endpoint but words it
// {"status":0}, is not offered it by the door and never claims it, so no
// conversation it recorded is asked again in other words.
func TestAnOlderAgentdTakesNoNewAgentTask(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	s := registry.New(db)
	if err := s.Register(ctx, registry.Registration{ID: "old", Host: "h", PID: 1, Queues: []string{"default"},
		Kinds: []string{"agent"}, Caps: []string{"model"}}); err != nil {
		t.Fatal(err)
	}
	door := &admit.Door{}
	params := claims.EnqueueParams{Kind: "agent", Payload: []byte(`{"prompt":"hi"}`)}
	_, err := door.Admit(ctx, db, admit.Submission{Caller: admit.Operator, Params: params, Override: "submit with --allow-unserved"})
	var ie *agentledger.InvalidError
	if !errors.As(err, &ie) || !strings.Contains(ie.Problem, "old lacks agent loop 2 (a newer agentd)") {
		t.Fatalf("only an older agentd live: %v", err)
	}
	p, err := door.Admit(ctx, db, admit.Submission{Caller: admit.Operator, Params: params, Unserved: true})
	if err != nil || !slices.Equal(p.Needs, []string{registry.CapAgent2, registry.CapModel}) {
		t.Fatalf("queued anyway: needs %q, %v", p.Needs, err)
	}
	r, err := claims.New(db).Enqueue(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	claim := func(caps ...string) []*agentledger.Task {
		got, err := claims.New(db).Claim(ctx, claims.ClaimParams{Queue: "default", Worker: "w", Limit: 10, Lease: time.Minute, Caps: caps})
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	if got := claim(registry.CapModel); len(got) != 0 {
		t.Fatalf("an older agentd claimed %d tasks", len(got))
	}
	if err := s.ExplainWaits(ctx, r.Task); err != nil || r.Task.WaitReason != "waiting for a daemon with agent loop 2 (a newer agentd)" {
		t.Fatalf("wait reason %q, %v", r.Task.WaitReason, err)
	}
	if got := claim(registry.CapAgent2, registry.CapModel); len(got) != 1 || got[0].ID != r.Task.ID {
		t.Fatalf("this release's agentd claimed %d tasks", len(got))
	}
}

// A daemon's door whose own HTTP tool refuses an origin (its allow-list)
// admits a literal URL a live pool of the fleet announced it may call, at
// every entrance — the API's, a parent's create_task — and the claims
// take the task there; an origin no live pool announced is refused with
// this daemon's reason.
func TestDoorReachesWhatTheFleetCan(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	s := registry.New(db)
	r := registry.Registration{ID: "http", Host: "h", PID: 1, Queues: []string{"default"}, Kinds: []string{"steps"},
		Tools: map[string]json.RawMessage{"http_request": nil, "create_task": nil},
		Caps:  []string{"http_request@http://127.0.0.1:18449", "tool:create_task", "tool:http_request"}}
	if err := s.Register(ctx, r); err != nil {
		t.Fatal(err)
	}
	door := &admit.Door{Reach: func(tool string, u *url.URL) error {
		return fmt.Errorf("%s is not allowed: the daemon's AGENTLEDGER_HTTP_ALLOWED_HOSTS does not list it", grants.Origin(u))
	}}
	call := func(url string) []byte {
		return []byte(`{"steps":[{"tool":"http_request","args":{"method":"POST","url":"` + url + `"}}]}`)
	}
	for _, caller := range []admit.Caller{admit.Tenant, admit.Parent, admit.Webhook} {
		p, err := door.Admit(ctx, db, admit.Submission{Caller: caller, Grant: &grants.Grant{All: true},
			Params: claims.EnqueueParams{Tenant: "acme", Kind: "steps", Payload: call("http://127.0.0.1:18449/api")}})
		if err != nil || !slices.Equal(p.Needs, []string{"http_request@http://127.0.0.1:18449"}) {
			t.Errorf("%s: an origin the fleet reaches: needs %q, %v", caller, p.Needs, err)
		}
		_, err = door.Admit(ctx, db, admit.Submission{Caller: caller, Grant: &grants.Grant{All: true},
			Params: claims.EnqueueParams{Tenant: "acme", Kind: "steps", Payload: call("http://127.0.0.1:9/api")}})
		var ie *agentledger.InvalidError
		if !errors.As(err, &ie) || !strings.Contains(ie.Problem, "the daemon's AGENTLEDGER_HTTP_ALLOWED_HOSTS does not list it") {
			t.Errorf("%s: an origin nobody reaches: %v", caller, err)
		}
	}
	// A tenant who asks queues it for a daemon not up yet; the refusal
	// says how.
	unreached := claims.EnqueueParams{Tenant: "acme", Kind: "steps", Payload: call("http://127.0.0.1:9/api")}
	_, err := door.Admit(ctx, db, admit.Submission{Caller: admit.Tenant, Grant: &grants.Grant{All: true}, Params: unreached,
		Override: "submit with allow_unserved"})
	if err == nil || !strings.HasSuffix(err.Error(), "submit with allow_unserved to queue it for a worker that is not up yet") {
		t.Errorf("an origin nobody reaches: %v, want the way to queue it anyway", err)
	}
	p, err := door.Admit(ctx, db, admit.Submission{Caller: admit.Tenant, Grant: &grants.Grant{All: true}, Params: unreached, Unserved: true})
	if err != nil || !slices.Equal(p.Needs, []string{"http_request@http://127.0.0.1:9"}) {
		t.Errorf("an origin nobody reaches, allow_unserved: needs %q, %v", p.Needs, err)
	}
	// Its grant still binds it.
	_, err = door.Admit(ctx, db, admit.Submission{Caller: admit.Tenant, Grant: &grants.Grant{Kinds: []string{"steps"}, Tools: []string{"http_request"}},
		Params: unreached, Unserved: true})
	var denied *grants.DeniedError
	if !errors.As(err, &denied) {
		t.Errorf("an origin outside the grant, allow_unserved: %v, want it denied", err)
	}
}

// A running task whose lease expired — its daemon gone — is explained as a
// queued one is when no live pool can take it over; before its lease
// expires, or once a pool that can run it is live, it is not.
func TestAnExpiredLeaseNobodyCanTakeOverIsExplained(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	s := registry.New(db)
	if err := s.Register(ctx, registry.Registration{ID: "plain", Host: "h", PID: 1, Queues: []string{"default"},
		Kinds: []string{"steps"}, Caps: []string{"tool:http_request"}}); err != nil {
		t.Fatal(err)
	}
	past, future := time.Now().Add(-time.Minute), time.Now().Add(time.Minute)
	task := &agentledger.Task{ID: 1, Queue: "default", Kind: "steps", State: agentledger.StateRunning,
		Needs: []string{"tool:open_ticket"}, LeaseExpiresAt: &future}
	if err := s.ExplainWaits(ctx, task); err != nil || task.WaitReason != "" || render.Waiting(task) != "" {
		t.Fatalf("a live lease: %q %v, want no reason", task.WaitReason, err)
	}
	task.LeaseExpiresAt = &past
	if err := s.ExplainWaits(ctx, task); err != nil || render.Waiting(task) != "waiting for a daemon with tool open_ticket" {
		t.Fatalf("an expired lease nobody can take over: %q %v", render.Waiting(task), err)
	}
	if err := s.Register(ctx, registry.Registration{ID: "tickets", Host: "h", PID: 2, Queues: []string{"default"},
		Kinds: []string{"steps"}, Caps: []string{"tool:open_ticket"}}); err != nil {
		t.Fatal(err)
	}
	if err := s.ExplainWaits(ctx, task); err != nil || render.Waiting(task) != "" {
		t.Fatalf("with a pool that can take it over: %q %v", render.Waiting(task), err)
	}
}

// A steps task whose create_task call names a child no live worker could
// run is refused as the child would be, naming the step: queued, the child
// would wait for such a worker, and its parent waiting for it with it.
// Queued anyway, it is admitted; a child whose kind, queue or payload is
// made of an earlier result is the run's to check.
func TestDoorRefusesAChildNoLiveWorkerCanRun(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	r := registry.Registration{ID: "steps-only", Host: "h", PID: 1, Queues: []string{"default"}, Kinds: []string{"steps", "agent"},
		Tools: map[string]json.RawMessage{"http_request": nil, "create_task": nil, "wait_for_children": nil},
		Caps:  []string{"http_request@http://x.example:80", "tool:http_request", "tool:create_task", "tool:wait_for_children"}}
	if err := registry.New(db).Register(ctx, r); err != nil {
		t.Fatal(err)
	}
	admitted := func(payload string, anyway bool) error {
		_, err := (&admit.Door{}).Admit(ctx, db, admit.Submission{Caller: admit.Operator, Unserved: anyway,
			Override: "submit with --allow-unserved", Params: claims.EnqueueParams{Kind: "steps", Payload: []byte(payload)}})
		return err
	}
	child := func(args string) string { return `{"tool":"create_task","args":` + args + `}` }
	list := func(steps ...string) string { return `{"steps":[` + strings.Join(steps, ",") + `]}` }
	const anyway = "; submit with --allow-unserved to queue it for a worker that is not up yet"
	const get = `{"tool":"http_request","args":{"method":"GET","url":"http://x.example/"}}`
	for _, c := range []struct{ payload, want string }{
		{list(get, child(`{"kind":"agent","payload":{"prompt":"hi"}}`)),
			"step 1's child: no live worker can run it: steps-only lacks a model endpoint" + anyway},
		{list(child(`{"kind":"echo"}`)),
			`step 0's child: no live worker serves "echo"; the live workers serve agent, steps` + anyway},
		{list(child(`{"kind":"steps","queue":"billing","payload":` + list(get) + `}`)),
			`step 0's child: no live worker serves kind "steps" on queue "billing"; it is served on default` + anyway},
		{list(child(`{"kind":"steps","payload":` + list(child(`{"kind":"agent","payload":{"prompt":"hi"}}`)) + `}`)),
			"step 0's child: step 0's child: no live worker can run it: steps-only lacks a model endpoint" + anyway},
		{list(child(`{"kind":"steps","payload":` + list(get) + `}`)), ""},
		{list(child(`{"kind":"agent","queue":"","payload":{"prompt":"hi"}}`)),
			"step 0's child: no live worker can run it: steps-only lacks a model endpoint" + anyway},
		{list(get, child(`{"kind":"steps","queue":"${steps.0.body.queue}","payload":`+list(get)+`}`)), ""},
		{list(get, child(`{"kind":"agent","payload":{"prompt":"${steps.0.body.q}"}}`)), ""},
	} {
		err := admitted(c.payload, false)
		var ie *agentledger.InvalidError
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v, want it admitted", c.payload, err)
		case c.want != "" && (!errors.As(err, &ie) || ie.Field != "payload" || ie.Problem != c.want):
			t.Errorf("%s: %v\nwant payload: %s", c.payload, err, c.want)
		}
		if err := admitted(c.payload, true); err != nil {
			t.Errorf("%s queued anyway: %v", c.payload, err)
		}
	}
}

// A steps task whose create_task call names a child payload its kind
// would refuse is refused at the door, naming the step, whoever submits
// it and even queued anyway: it would run up to that call, then fail for
// good after its earlier effects. A payload made of an earlier result is
// the run's to check.
func TestDoorRefusesAChildPayloadItsKindRefuses(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	r := registry.Registration{ID: "all", Host: "h", PID: 1, Queues: []string{"default"}, Kinds: []string{"steps", "agent", "sleep"},
		Tools: map[string]json.RawMessage{"http_request": nil, "create_task": nil},
		Caps:  []string{registry.CapModel, registry.CapAgent2, "http_request@http://x.example:80", "tool:http_request", "tool:create_task"}}
	if err := registry.New(db).Register(ctx, r); err != nil {
		t.Fatal(err)
	}
	child := func(args string) string { return `{"tool":"create_task","args":` + args + `}` }
	list := func(steps ...string) string { return `{"steps":[` + strings.Join(steps, ",") + `]}` }
	const get = `{"tool":"http_request","args":{"method":"GET","url":"http://x.example/"}}`
	for _, c := range []struct{ payload, want string }{
		{list(get, child(`{"kind":"sleep","payload":{"for":"60s"}}`)), `step 1's child: payload: "for" is unknown (known: ms)`},
		{list(child(`{"kind":"steps","payload":{"steps":{}}}`)), `step 0's child: payload: `},
		{list(child(`{"kind":"agent","payload":{}}`)), `step 0's child: payload: `},
		{list(child(`{"kind":"steps","payload":` + list(get, child(`{"kind":"sleep","payload":{"ms":-1}}`)) + `}`)),
			`step 0's child: step 1's child: payload: `},
		{list(child(`{"kind":"sleep","payload":{"ms":5}}`)), ""},
		{list(get, child(`{"kind":"sleep","payload":{"ms":"${steps.0.body.ms}"}}`)), ""},
	} {
		for _, s := range []admit.Submission{
			{Caller: admit.Operator, Params: claims.EnqueueParams{Kind: "steps", Payload: []byte(c.payload)}},
			{Caller: admit.Operator, Unserved: true, Params: claims.EnqueueParams{Kind: "steps", Payload: []byte(c.payload)}},
			{Caller: admit.Tenant, Params: claims.EnqueueParams{Tenant: "acme", Kind: "steps", Payload: []byte(c.payload)}},
		} {
			_, err := (&admit.Door{}).Admit(ctx, db, s)
			var ie *agentledger.InvalidError
			switch {
			case c.want == "" && err != nil:
				t.Errorf("%s (%v): %v, want it admitted", c.payload, s.Caller, err)
			case c.want != "" && (!errors.As(err, &ie) || ie.Field != "payload" || !strings.HasPrefix(ie.Problem, c.want)):
				t.Errorf("%s (%v): %v\nwant payload: %s…", c.payload, s.Caller, err, c.want)
			}
		}
	}
}

// A tenant's refusal names what the workers lack, not the workers: their
// hosts and pids are the operator's, who reads them in the same refusal.
func TestDoorNamesNoWorkerToATenant(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	for _, id := range []string{"vm-7402-908d17", "vm-7403-1a2b3c"} {
		r := registry.Registration{ID: id, Host: "h", PID: 1, Queues: []string{"default"}, Kinds: []string{"steps", "agent"},
			Caps: []string{"tool:http_request"}}
		if err := registry.New(db).Register(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	submit := func(c admit.Caller) string {
		_, err := (&admit.Door{}).Admit(ctx, db, admit.Submission{Caller: c,
			Params: claims.EnqueueParams{Tenant: "acme", Kind: "agent", Payload: []byte(`{"prompt":"hi"}`)}})
		var ie *agentledger.InvalidError
		if !errors.As(err, &ie) {
			t.Fatalf("%v: %v, want a refusal", c, err)
		}
		return ie.Problem
	}
	if got := submit(admit.Tenant); got != "no live worker can run this task: a worker lacks a model endpoint" {
		t.Errorf("to a tenant: %q", got)
	}
	if got := submit(admit.Operator); !strings.Contains(got, "vm-7402-908d17 lacks a model endpoint; vm-7403-1a2b3c lacks a model endpoint") {
		t.Errorf("to the operator: %q", got)
	}
	// So too a max_steps above what the workers allow.
	r := registry.Registration{ID: "vm-7404-4d5e6f", Host: "h", PID: 3, Queues: []string{"default"}, Kinds: []string{"agent"},
		Caps: []string{registry.CapModel, registry.CapAgent2, registry.CapAgentMaxSteps(20)}}
	if err := registry.New(db).Register(ctx, r); err != nil {
		t.Fatal(err)
	}
	_, err := (&admit.Door{}).Admit(ctx, db, admit.Submission{Caller: admit.Tenant,
		Params: claims.EnqueueParams{Tenant: "acme", Kind: "agent", Payload: []byte(`{"prompt":"hi","max_steps":50}`)}})
	if err == nil || strings.Contains(err.Error(), "vm-") || !strings.Contains(err.Error(), "a worker allows 20") {
		t.Errorf("max_steps to a tenant: %v", err)
	}
}
