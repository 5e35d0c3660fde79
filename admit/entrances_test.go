package admit_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/admit"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/client"
	"github.com/agentledger/agentledger/grants"
	"github.com/agentledger/agentledger/httpapi"
	"github.com/agentledger/agentledger/internal/test/doorcases"
	"github.com/agentledger/agentledger/internal/test/logbuf"
	"github.com/agentledger/agentledger/internal/test/testenv"
	"github.com/agentledger/agentledger/operator"
	"github.com/agentledger/agentledger/schedule"
	"github.com/agentledger/agentledger/tenants"
	"github.com/agentledger/agentledger/tools"
	"github.com/agentledger/agentledger/webhooks"
)

// TestEveryEntranceThroughTheDoor puts every rule of the door to every
// entrance, against a real database.
func TestEveryEntranceThroughTheDoor(t *testing.T) {
	t.Parallel()
	d := newDoorEnv(t)
	submit := map[string]func(*testing.T, int, doorcases.Case) (*agentledger.Task, error){
		"api": d.viaAPI, "client": d.viaClient, "webhook": d.viaWebhook, "schedule": d.viaSchedule, "parent": d.viaParent,
	}
	for i, c := range doorcases.Cases {
		for _, name := range doorcases.Entrances {
			want, ok := c.Want[name]
			if !ok || name == "agentctl" {
				continue
			}
			t.Run(c.Name+"/"+name, func(t *testing.T) {
				task, err := submit[name](t, i, c)
				if got := doorcases.Outcome(task, err); got != want {
					t.Errorf("%s: %s, want %s", name, got, want)
				}
			})
		}
	}
}

type doorEnv struct {
	*testenv.Env
	door  *admit.Door
	grant *grants.Grant
	api   *httptest.Server
	token string
}

func newDoorEnv(t *testing.T) *doorEnv {
	ctx := context.Background()
	d := &doorEnv{Env: testenv.New(t)}
	d.grant = doorcases.Grant()
	gs := grants.NewStore(d.DB)
	doorcases.Prepare(t, d.DB, gs)
	// The daemon's door: the grants; its typed kinds are elsewhere.
	d.door = &admit.Door{Grants: gs}

	ts := tenants.NewStore(d.DB)
	if _, err := ts.CreateTenant(ctx, "acme"); err != nil {
		t.Fatal(err)
	}
	_, token, err := ts.CreateToken(ctx, "acme", "door", 0)
	if err != nil {
		t.Fatal(err)
	}
	d.token = token
	api, err := httpapi.New(httpapi.Config{DB: d.DB, Tenants: ts, Claims: claims.New(d.DB), Operator: operator.New(d.DB),
		Door: d.door, IdempotencyKeyOptional: true, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	d.api = httptest.NewServer(api.Handler())
	t.Cleanup(d.api.Close)
	return d
}

// get reads task id.
func (d *doorEnv) get(id int64) (*agentledger.Task, error) {
	return d.Claims.Get(context.Background(), "acme", id)
}

func (d *doorEnv) viaAPI(t *testing.T, _ int, c doorcases.Case) (*agentledger.Task, error) {
	body := map[string]any{"kind": c.Kind, "priority": c.Priority}
	if c.Payload != "" {
		body["payload"] = json.RawMessage(c.Payload)
	}
	if !c.RunAt.IsZero() {
		body["run_at"] = c.RunAt
	}
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPost, d.api.URL+"/v1/tasks", bytes.NewReader(b))
	req.Header.Set("Authorization", "Bearer "+d.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var v struct {
		ID     int64  `json:"id"`
		Field  string `json:"field"`
		Detail string `json:"detail"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		t.Fatal(err)
	}
	switch resp.StatusCode {
	case http.StatusCreated:
		return d.get(v.ID)
	case http.StatusUnprocessableEntity:
		return nil, agentledger.Invalid(v.Field, "%s", v.Detail)
	case http.StatusForbidden:
		return nil, &grants.DeniedError{Tenant: "acme", Missing: v.Detail}
	}
	return nil, fmt.Errorf("status %d: %s", resp.StatusCode, v.Detail)
}

func (d *doorEnv) viaClient(_ *testing.T, _ int, c doorcases.Case) (*agentledger.Task, error) {
	return client.Database(d.DB, "acme").Submit(context.Background(), client.Request{Kind: c.Kind, Payload: payloadOf(c),
		Options: client.Options{Priority: c.Priority, RunAt: c.RunAt, Key: c.Key}})
}

func payloadOf(c doorcases.Case) json.RawMessage {
	if c.Payload == "" {
		return nil
	}
	return json.RawMessage(c.Payload)
}

const hookSecret = "door-secret"

// viaWebhook delivers the payload as the body of a source whose task is
// the case's; a source the rules refuse is refused when it is loaded.
func (d *doorEnv) viaWebhook(t *testing.T, i int, c doorcases.Case) (*agentledger.Task, error) {
	src := webhooks.Source{Name: "src" + strconv.Itoa(i), Type: webhooks.TypeHMAC, Secret: hookSecret, Header: "X-Signature",
		DeliveryHeader: "X-Delivery", Tenant: "acme", Kind: c.Kind, Priority: int16(c.Priority), Payload: webhooks.PayloadBody}
	h, err := webhooks.New(d.DB, []webhooks.Source{src}, webhooks.Config{Door: d.door, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("POST /v1/hooks/{source}", h)
	body := []byte(c.Payload)
	if len(body) == 0 {
		body = []byte(`{}`)
	}
	mac := hmac.New(sha256.New, []byte(hookSecret))
	mac.Write(body)
	req := httptest.NewRequest(http.MethodPost, "/v1/hooks/"+src.Name, bytes.NewReader(body))
	req.Header.Set("X-Signature", "sha256="+hex.EncodeToString(mac.Sum(nil)))
	req.Header.Set("X-Delivery", "d-"+strconv.Itoa(i))
	req.Header.Set("Content-Type", "application/json")
	w := httptest.NewRecorder()
	mux.ServeHTTP(w, req)
	var v struct {
		TaskID int64  `json:"task_id"`
		Detail string `json:"detail"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &v); err != nil {
		t.Fatalf("%d %s: %v", w.Code, w.Body, err)
	}
	switch w.Code {
	case http.StatusAccepted:
		return d.get(v.TaskID)
	case http.StatusUnprocessableEntity: // the delivery's body is the payload
		return nil, agentledger.Invalid("payload", "%s", v.Detail)
	}
	return nil, fmt.Errorf("status %d: %s", w.Code, w.Body)
}

// viaSchedule adds a schedule making the case's task and fires its first
// slot; a task the rules refuse is refused when the schedule is added, or
// its slot is not fired (the refusal logged).
func (d *doorEnv) viaSchedule(t *testing.T, i int, c doorcases.Case) (*agentledger.Task, error) {
	ctx := context.Background()
	name := "sched-" + strconv.Itoa(i)
	store := schedule.NewStore(d.DB)
	store.Now = d.Now
	sc, err := store.Add(ctx, schedule.Schedule{Name: name, Spec: "@every 1h", Tenant: "acme", Kind: c.Kind,
		Payload: payloadOf(c), Priority: int16(c.Priority)})
	if err != nil {
		return nil, err
	}
	d.Advance(time.Hour)
	logs := &logbuf.Buffer{}
	s, err := schedule.NewScheduler(d.DB, schedule.Config{Now: d.Now, Door: d.door, Logger: slog.New(slog.NewJSONHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	r, err := d.Claims.GetByKey(ctx, "acme", schedule.Key(name, *sc.NextFireAt))
	if err == nil {
		return r, nil
	}
	for _, line := range strings.Split(logs.String(), "\n") {
		var rec struct{ Msg, Schedule, Err string }
		if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "schedule: slot not fired" && rec.Schedule == name {
			field, problem, _ := strings.Cut(rec.Err, ": ")
			return nil, agentledger.Invalid(field, "%s", problem)
		}
	}
	return nil, fmt.Errorf("slot neither fired nor refused: %v\n%s", err, logs.String())
}

// viaParent runs create_task for a task of acme's, under acme's grant.
func (d *doorEnv) viaParent(t *testing.T, i int, c doorcases.Case) (*agentledger.Task, error) {
	ctx := context.Background()
	queue := "parent-" + strconv.Itoa(i) // a queue of its own: the schedules move the clock past older leases
	d.Enqueue(claims.EnqueueParams{Tenant: "acme", Queue: queue, Kind: "steps", Payload: json.RawMessage(`{"steps":[{"tool":"create_task"}]}`)})
	claimed, err := d.Claims.Claim(ctx, claims.ClaimParams{Queue: queue, Worker: "w1", Limit: 1, Lease: testenv.Lease})
	if err != nil || len(claimed) != 1 {
		t.Fatalf("claim the parent: %d tasks, %v", len(claimed), err)
	}
	parent := claimed[0]
	args := map[string]any{"kind": c.Kind, "priority": c.Priority}
	if c.Payload != "" {
		args["payload"] = json.RawMessage(c.Payload)
	}
	b, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	res, err := tools.Invoke(ctx, d.Ledger, tools.NewCreateTask(d.door),
		tools.Call{Task: parent, StepPath: "create_task/0", Args: b, Grant: d.grant})
	if err != nil {
		return nil, err
	}
	var v struct {
		TaskID int64 `json:"task_id"`
	}
	if err := json.Unmarshal(res.Body, &v); err != nil {
		t.Fatal(err)
	}
	return d.get(v.TaskID)
}
