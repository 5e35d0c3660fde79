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
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/client"
	"github.com/agentledger/agentledger/httpapi"
	"github.com/agentledger/agentledger/internal/test/doorcases"
	"github.com/agentledger/agentledger/waits"
	"github.com/agentledger/agentledger/webhooks"
)

// TestEverySignalEntranceThroughTheDoor puts every rule of the signal
// door to every signal entrance, against a real database: a signal that
// passes wakes the task waiting for it, or is kept; one refused names its
// field and is not stored.
func TestEverySignalEntranceThroughTheDoor(t *testing.T) {
	t.Parallel()
	d := newDoorEnv(t)
	send := map[string]func(*testing.T, int, doorcases.SignalCase, string) (*waits.Signal, error){
		"api": d.signalViaAPI, "client": d.signalViaClient, "webhook": d.signalViaWebhook,
	}
	for i, c := range doorcases.SignalCases {
		for _, name := range doorcases.SignalEntrances {
			want, ok := c.Want[name]
			if !ok || name == "agentctl" {
				continue
			}
			t.Run(c.Case+"/"+name, func(t *testing.T) {
				key := c.Key
				if key != "" {
					key += "/" + name
				}
				if c.Wait {
					d.awaitSignal(t, c.Name, key)
				}
				before := d.signalCount(t)
				s, err := send[name](t, i, c, key)
				if got := doorcases.SignalOutcome(s, err); got != want {
					t.Errorf("%s: %s, want %s", name, got, want)
				}
				if stored := d.signalCount(t) - before; (err == nil) != (stored == 1) {
					t.Errorf("%d signals stored (error %v)", stored, err)
				}
			})
		}
	}
}

// awaitSignal parks a new task of acme's on a wait for name and key, as
// wait_for_signal does.
func (d *doorEnv) awaitSignal(t *testing.T, name, key string) {
	t.Helper()
	task := d.Enqueue(claims.EnqueueParams{Tenant: "acme", Queue: "waits", Kind: "steps"})
	if _, err := waits.NewStore(d.DB).Await(context.Background(), waits.Wait{TaskID: task.ID, Generation: 1,
		Step: "wait_for_signal/0", Tenant: "acme", Kind: waits.KindSignal, Signal: name, Key: key}, nil, time.Hour); err != nil {
		t.Fatal(err)
	}
}

func (d *doorEnv) signalCount(t *testing.T) int {
	t.Helper()
	var n int
	if err := d.DB.QueryRow(context.Background(), `SELECT count(*) FROM signals`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func (d *doorEnv) signalViaAPI(t *testing.T, i int, c doorcases.SignalCase, key string) (*waits.Signal, error) {
	body := map[string]any{"name": c.Name, "key": key}
	if c.Payload != "" {
		body["payload"] = json.RawMessage(c.Payload)
	}
	if c.Tenant != "" {
		body["tenant"] = c.Tenant
	}
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPost, d.api.URL+"/v1/signals", bytes.NewReader(b))
	req.Header.Set("Authorization", "Bearer "+d.token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(httpapi.KeyHeader, "signal-"+strconv.Itoa(i))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var v struct {
		httpapi.Signal
		Field  string `json:"field"`
		Detail string `json:"detail"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		t.Fatal(err)
	}
	switch resp.StatusCode {
	case http.StatusCreated:
		return &waits.Signal{ID: v.ID, State: v.State}, nil
	case http.StatusUnprocessableEntity:
		return nil, agentledger.Invalid(v.Field, "%s", v.Detail)
	}
	return nil, fmt.Errorf("status %d: %s", resp.StatusCode, v.Detail)
}

func (d *doorEnv) signalViaClient(_ *testing.T, _ int, c doorcases.SignalCase, key string) (*waits.Signal, error) {
	sent, err := client.Database(d.DB, "acme").Send(context.Background(), client.Signal{Name: c.Name, Key: key,
		Payload: json.RawMessage(c.Payload)})
	if err != nil {
		return nil, err
	}
	return &sent.Signal, nil
}

// signalViaWebhook delivers {"name", "key", "payload"} to a source that
// maps it to a signal of acme's.
func (d *doorEnv) signalViaWebhook(t *testing.T, i int, c doorcases.SignalCase, key string) (*waits.Signal, error) {
	m := &webhooks.SignalMap{NameFrom: "/name", KeyFrom: "/key"}
	body := fmt.Sprintf(`{"name":%q,"key":%q}`, c.Name, key)
	if c.Payload != "" {
		m.PayloadFrom = "/payload"
		body = fmt.Sprintf(`{"name":%q,"key":%q,"payload":%s}`, c.Name, key, c.Payload)
	}
	src := webhooks.Source{Name: "sig" + strconv.Itoa(i), Type: webhooks.TypeHMAC, Secret: hookSecret, Header: "X-Signature",
		DeliveryHeader: "X-Delivery", Tenant: "acme", Signal: m}
	h, err := webhooks.New(d.DB, []webhooks.Source{src}, webhooks.Config{Door: d.door, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("POST /v1/hooks/{source}", h)
	req := httptest.NewRequest(http.MethodPost, "/v1/hooks/"+src.Name, strings.NewReader(body))
	req.Header.Set("X-Signature", "sha256="+sign(body))
	req.Header.Set("X-Delivery", "s-"+strconv.Itoa(i))
	req.Header.Set("Content-Type", "application/json")
	w := httptest.NewRecorder()
	mux.ServeHTTP(w, req)
	var v struct {
		SignalID int64  `json:"signal_id"`
		State    string `json:"state"`
		Detail   string `json:"detail"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &v); err != nil {
		t.Fatalf("%d %s: %v", w.Code, w.Body, err)
	}
	switch {
	case w.Code == http.StatusAccepted:
		return &waits.Signal{ID: v.SignalID, State: v.State}, nil
	case w.Code != http.StatusUnprocessableEntity:
		return nil, fmt.Errorf("status %d: %s", w.Code, w.Body)
	case strings.Contains(v.Detail, "PostgreSQL cannot store"):
		return nil, agentledger.Invalid("payload", "%s", v.Detail)
	}
	// "the body makes no valid signal: <field>: <problem>"
	_, rest, _ := strings.Cut(v.Detail, "signal: ")
	field, problem, _ := strings.Cut(rest, ": ")
	return nil, agentledger.Invalid(field, "%s", problem)
}

// sign is body's signature under the sources' secret.
func sign(body string) string {
	mac := hmac.New(sha256.New, []byte(hookSecret))
	mac.Write([]byte(body))
	return hex.EncodeToString(mac.Sum(nil))
}
