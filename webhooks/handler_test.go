package webhooks_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/internal/test/testdb"
	"github.com/agentledger/agentledger/webhooks"
)

func TestMain(m *testing.M) { testdb.Main(m) }

const pushBody = `{"ref": "refs/heads/main", "after": "0d1a26e6"}`

func TestGitHubDeliveryAndRedelivery(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil, nil)
	const id = "72d3162e-cc78-11e3-81ab-4c9367dc0958"

	first := e.github(ghSecret, id, "push", pushBody)
	if first.status != http.StatusAccepted || first.taskID() == 0 || first.json["duplicate"] != nil {
		t.Fatalf("first delivery: %d %s, want 202 with a task id", first.status, first.raw)
	}
	if ct := first.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q", ct)
	}
	task := e.task("gh", id, first.taskID())
	if task.Tenant != "acme" || task.Queue != "hooks" || task.Kind != "github_event" ||
		task.Priority != 7 || task.MaxAttempts != 3 || task.SubmissionKey != "hook:gh:"+id {
		t.Errorf("task %+v does not follow the source's template", task)
	}
	want := fmt.Sprintf(`{"source":"gh","delivery_id":%q,"event":"push","body":%s}`, id, pushBody)
	if !jsonEqual(t, task.Payload, []byte(want)) {
		t.Errorf("payload %s, want %s", task.Payload, want)
	}

	// GitHub's "Redeliver" sends the same X-GitHub-Delivery again.
	again := e.github(ghSecret, id, "push", pushBody)
	if again.status != http.StatusOK || again.json["duplicate"] != true || again.taskID() != first.taskID() {
		t.Fatalf("redelivery: %d %s, want 200 duplicate of task %d", again.status, again.raw, first.taskID())
	}
	e.wantCounts(1, 1)

	// A captured delivery replayed under a fresh id: the signature covers
	// only the body, so the body decides — the same delivery.
	replayed := e.github(ghSecret, "72d3162e-0000", "push", pushBody)
	if replayed.status != http.StatusOK || replayed.json["duplicate"] != true || replayed.taskID() != first.taskID() {
		t.Fatalf("the same body under a fresh id: %d %s, want 200 duplicate of task %d", replayed.status, replayed.raw, first.taskID())
	}
	e.wantCounts(1, 1)

	other := e.github(ghSecret, "72d3162e-0001", "push", `{"ref":"refs/heads/other"}`)
	if other.status != http.StatusAccepted || other.taskID() == first.taskID() {
		t.Fatalf("another delivery: %d %s, want 202 and a new task", other.status, other.raw)
	}
	e.wantCounts(2, 2)
	if got := e.outcomesSeen(); !slices.Equal(got, []string{"gh accepted", "gh duplicate", "gh duplicate", "gh accepted"}) {
		t.Errorf("outcomes %q", got)
	}
}

// GitHub's documented vector gets past verification (the body "Hello,
// World!" is then refused for not being JSON), and the same secret signs a
// JSON delivery that is accepted.
func TestGitHubDocumentationVectorOverHTTP(t *testing.T) {
	t.Parallel()
	const secret = "It's a Secret to Everybody"
	e := newEnv(t, []webhooks.Source{{Name: "gh", Type: webhooks.TypeGitHub, Secret: secret, Kind: "github_event"}}, nil)
	a := e.post("gh", strings.NewReader("Hello, World!"),
		"X-Hub-Signature-256", "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17",
		"X-GitHub-Delivery", "d1", "X-GitHub-Event", "push")
	e.wantProblem(a, http.StatusBadRequest, string(agentledger.CodeInvalidBody))
	// A key given twice is two readings of one delivery: not JSON either,
	// and the answer names no package of ours.
	dup := e.github(secret, "d3", "push", `{"a":1,"a":2}`)
	e.wantProblem(dup, http.StatusBadRequest, string(agentledger.CodeInvalidBody))
	if !strings.Contains(string(dup.raw), `an object gives the key \"a\" twice`) || strings.Contains(string(dup.raw), "canonjson") {
		t.Errorf("a duplicate key: %s", dup.raw)
	}
	if a := e.github(secret, "d2", "push", pushBody); a.status != http.StatusAccepted {
		t.Fatalf("%d %s", a.status, a.raw)
	}
	e.wantCounts(1, 1)
}

func TestGitHubFormEncoded(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil, nil)
	body := "payload=" + strings.ReplaceAll(strings.ReplaceAll(`{"zen":"Keep it simple."}`, `"`, "%22"), " ", "+")
	a := e.post("gh", strings.NewReader(body), "Content-Type", "application/x-www-form-urlencoded",
		"X-Hub-Signature-256", "sha256="+mac(ghSecret, body), "X-GitHub-Delivery", "f1", "X-GitHub-Event", "ping")
	if a.status != http.StatusAccepted {
		t.Fatalf("%d %s", a.status, a.raw)
	}
	task := e.task("gh", "f1", a.taskID())
	if !jsonEqual(t, task.Payload, []byte(`{"source":"gh","delivery_id":"f1","event":"ping","body":{"zen":"Keep it simple."}}`)) {
		t.Errorf("payload %s", task.Payload)
	}
	// Given twice, a payload or a delivery id is two readings of one
	// delivery: refused, not the first taken.
	twice := body + "&" + body
	a = e.post("gh", strings.NewReader(twice), "Content-Type", "application/x-www-form-urlencoded",
		"X-Hub-Signature-256", "sha256="+mac(ghSecret, twice), "X-GitHub-Delivery", "f2", "X-GitHub-Event", "ping")
	e.wantProblem(a, http.StatusBadRequest, string(agentledger.CodeInvalidBody))
	if want := "a form-encoded GitHub delivery carries its JSON in one payload field; this one has 2"; a.json["detail"] != want {
		t.Errorf("detail %v, want %q: it said the body is not JSON", a.json["detail"], want)
	}
	req, err := http.NewRequest(http.MethodPost, e.url+"/v1/hooks/gh", strings.NewReader(pushBody))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Hub-Signature-256", "sha256="+mac(ghSecret, pushBody))
	req.Header.Set("X-GitHub-Event", "push")
	req.Header.Add("X-GitHub-Delivery", "f3")
	req.Header.Add("X-GitHub-Delivery", "f4")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("a delivery id given twice: %d, want 400", resp.StatusCode)
	}
	e.wantCounts(1, 1)
}

func TestBadSignatureStoresNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil, nil)
	good := "sha256=" + mac(ghSecret, pushBody)
	for name, headers := range map[string][]string{
		"missing":        {"X-GitHub-Delivery", "b1"},
		"empty":          {"X-Hub-Signature-256", "", "X-GitHub-Delivery", "b1"},
		"other secret":   {"X-Hub-Signature-256", "sha256=" + mac(ghSecret+"x", pushBody), "X-GitHub-Delivery", "b1"},
		"other body":     {"X-Hub-Signature-256", "sha256=" + mac(ghSecret, pushBody+" "), "X-GitHub-Delivery", "b1"},
		"no prefix":      {"X-Hub-Signature-256", strings.TrimPrefix(good, "sha256="), "X-GitHub-Delivery", "b1"},
		"sha1":           {"X-Hub-Signature", "sha1=" + mac(ghSecret, pushBody), "X-GitHub-Delivery", "b1"},
		"garbage":        {"X-Hub-Signature-256", "sha256=not-hex", "X-GitHub-Delivery", "b1"},
		"no delivery id": {"X-Hub-Signature-256", "sha256=" + mac(ghSecret, pushBody+"!")},
	} {
		a := e.post("gh", strings.NewReader(pushBody), headers...)
		e.wantProblem(a, http.StatusUnauthorized, string(agentledger.CodeBadSignature))
		if strings.Contains(a.raw, ghSecret) || strings.Contains(a.raw, mac(ghSecret, pushBody)) {
			t.Errorf("%s: the answer shows the secret or the signature: %s", name, a.raw)
		}
	}
	// Slack and generic sources refuse the same way.
	e.wantProblem(e.slack("wrong", e.now, `{"type":"event_callback","event_id":"Ev1"}`), http.StatusUnauthorized, string(agentledger.CodeBadSignature))
	e.wantProblem(e.post("ci", strings.NewReader(`{}`), "X-Signature", mac("wrong", `{}`), "X-Delivery", "c1"),
		http.StatusUnauthorized, string(agentledger.CodeBadSignature))
	e.wantCounts(0, 0)
	for _, o := range e.outcomesSeen() {
		if !strings.HasSuffix(o, " rejected") {
			t.Errorf("outcome %q, want rejected", o)
		}
	}
}

func TestConcurrentIdenticalDeliveries(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil, nil)
	const n = 20
	answers := make([]answer, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			answers[i] = e.github(ghSecret, "same-delivery", "push", pushBody)
		})
	}
	close(start)
	wg.Wait()
	accepted := 0
	for _, a := range answers {
		switch {
		case a.status == http.StatusAccepted:
			accepted++
		case a.status == http.StatusOK && a.json["duplicate"] == true:
		default:
			t.Fatalf("answer %d %s", a.status, a.raw)
		}
		if a.taskID() != answers[0].taskID() || a.taskID() == 0 {
			t.Fatalf("task ids differ: %d and %d", a.taskID(), answers[0].taskID())
		}
	}
	if accepted != 1 {
		t.Fatalf("%d deliveries accepted, want 1", accepted)
	}
	e.wantCounts(1, 1)
	e.task("gh", "same-delivery", answers[0].taskID())
}

func TestSlack(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil, nil)
	event := `{"token":"x","team_id":"T1","type":"event_callback","event_id":"Ev08MFMKH6",` +
		`"event":{"type":"app_mention","text":"hi","channel":"C1"}}`

	t.Run("url_verification", func(t *testing.T) {
		e := newEnv(t, nil, nil)
		body := `{"token":"Jhj5dZrVaK7ZwHHjRyZWjbDl","challenge":"3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P","type":"url_verification"}`
		a := e.slack(slackSecret, e.now, body)
		if a.status != http.StatusOK || a.json["challenge"] != "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P" {
			t.Fatalf("%d %s, want 200 with the challenge", a.status, a.raw)
		}
		// The handshake is answered only once it is verified.
		e.wantProblem(e.slack("wrong", e.now, body), http.StatusUnauthorized, string(agentledger.CodeBadSignature))
		e.wantCounts(0, 0)
	})

	t.Run("event and retry", func(t *testing.T) {
		a := e.slack(slackSecret, e.now.Add(-time.Minute), event)
		if a.status != http.StatusAccepted {
			t.Fatalf("%d %s", a.status, a.raw)
		}
		task := e.task("slack", "Ev08MFMKH6", a.taskID())
		if task.Kind != "slack_event" || task.Tenant != "default" || task.Queue != "default" || task.MaxAttempts != 25 {
			t.Errorf("task %+v", task)
		}
		var p struct {
			Source, DeliveryID, Event string
			Body                      map[string]any
		}
		if err := json.Unmarshal(task.Payload, &p); err != nil || p.Source != "slack" ||
			p.Event != "app_mention" || p.Body["event_id"] != "Ev08MFMKH6" {
			t.Errorf("payload %s (%v)", task.Payload, err)
		}
		// Slack retries with a new timestamp and X-Slack-Retry-Num.
		b := e.slack(slackSecret, e.now, event)
		if b.status != http.StatusOK || b.json["duplicate"] != true || b.taskID() != a.taskID() {
			t.Fatalf("retry: %d %s", b.status, b.raw)
		}
	})

	t.Run("no event_id", func(t *testing.T) {
		a := e.slack(slackSecret, e.now, `{"type":"event_callback","event":{"type":"message"}}`)
		e.wantProblem(a, http.StatusBadRequest, string(agentledger.CodeMissingDeliveryID))
	})
	t.Run("a slash command", func(t *testing.T) {
		body := "command=%2Fdeploy&text=now"
		ts := strconv.FormatInt(e.now.Unix(), 10)
		a := e.post("slack", strings.NewReader(body), "Content-Type", "application/x-www-form-urlencoded",
			"X-Slack-Request-Timestamp", ts, "X-Slack-Signature", "v0="+mac(slackSecret, "v0:"+ts+":"+body))
		e.wantProblem(a, http.StatusBadRequest, string(agentledger.CodeInvalidBody))
		if !strings.Contains(string(a.raw), "is not an Events API delivery") {
			t.Errorf("a slash command: %s", a.raw)
		}
	})
	e.wantCounts(1, 1)
}

func TestSlackStaleTimestamp(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil, nil)
	body := `{"type":"event_callback","event_id":"EvStale","event":{"type":"message"}}`
	for _, at := range []time.Time{
		e.now.Add(-webhooks.SlackMaxSkew - time.Second),
		e.now.Add(webhooks.SlackMaxSkew + time.Second),
		e.now.Add(-24 * time.Hour),
	} {
		a := e.slack(slackSecret, at, body)
		e.wantProblem(a, http.StatusUnauthorized, string(agentledger.CodeStaleTimestamp))
	}
	e.wantCounts(0, 0)
	// Within the window the same request is accepted.
	if a := e.slack(slackSecret, e.now.Add(-webhooks.SlackMaxSkew+time.Second), body); a.status != http.StatusAccepted {
		t.Fatalf("%d %s", a.status, a.raw)
	}
	e.wantCounts(1, 1)
}

// Slack's documented example verifies end to end at its own time; its body
// (a slash command) is then refused for not being an Events API delivery.
func TestSlackDocumentationVectorOverHTTP(t *testing.T) {
	t.Parallel()
	srcs := []webhooks.Source{{Name: "slack", Type: webhooks.TypeSlack, Secret: "8f742231b10e8888abcd99yyyzzz85a5", Kind: "slack_event"}}
	e := newEnv(t, srcs, func(c *webhooks.Config) {
		c.Now = func() time.Time { return time.Unix(1531420618, 0).Add(time.Minute) }
	})
	body := "token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c"
	headers := []string{"Content-Type", "application/x-www-form-urlencoded", "X-Slack-Request-Timestamp", "1531420618",
		"X-Slack-Signature", "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503"}
	e.wantProblem(e.post("slack", strings.NewReader(body), headers...), http.StatusBadRequest, string(agentledger.CodeInvalidBody))
	e.wantProblem(e.post("slack", strings.NewReader(body+"&x=1"), headers...), http.StatusUnauthorized, string(agentledger.CodeBadSignature))
	e.wantCounts(0, 0)
}

func TestHMACSource(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil, nil)
	body := `{"build": 41, "status": "green"}`
	a := e.post("ci", strings.NewReader(body), "X-Signature", "sha256="+mac(ciSecret, body),
		"X-Delivery", "build-41", "X-Event", "build.finished")
	if a.status != http.StatusAccepted {
		t.Fatalf("%d %s", a.status, a.raw)
	}
	task := e.task("ci", "build-41", a.taskID())
	if task.Kind != "ci_event" || !jsonEqual(t, task.Payload, []byte(body)) {
		t.Errorf("task %s %s, want the body as payload", task.Kind, task.Payload)
	}
	// Without the prefix, and a duplicate.
	b := e.post("ci", strings.NewReader(body), "X-Signature", mac(ciSecret, body), "X-Delivery", "build-41")
	if b.status != http.StatusOK || b.taskID() != a.taskID() {
		t.Fatalf("%d %s", b.status, b.raw)
	}
	e.wantProblem(e.post("ci", strings.NewReader(body), "X-Signature", mac(ciSecret, body)),
		http.StatusBadRequest, string(agentledger.CodeMissingDeliveryID))
	e.wantProblem(e.post("ci", strings.NewReader(body), "X-Signature", mac(ciSecret, body), "X-Delivery", "has space"),
		http.StatusBadRequest, string(agentledger.CodeInvalidDeliveryID))
	e.wantProblem(e.post("ci", strings.NewReader(body), "X-Signature", mac(ciSecret, body), "X-Delivery", strings.Repeat("x", 129)),
		http.StatusBadRequest, string(agentledger.CodeInvalidDeliveryID))
	e.wantProblem(e.post("ci", strings.NewReader("not json"), "X-Signature", mac(ciSecret, "not json"), "X-Delivery", "d"),
		http.StatusBadRequest, string(agentledger.CodeInvalidBody))
	// jsonb cannot hold \u0000: refused, nothing stored.
	nul := `{"a":"\u0000"}`
	e.wantProblem(e.post("ci", strings.NewReader(nul), "X-Signature", mac(ciSecret, nul), "X-Delivery", "nul"),
		http.StatusUnprocessableEntity, string(agentledger.CodeInvalid))
	e.wantCounts(1, 1)
}

func TestBodyTooLarge(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil, func(c *webhooks.Config) { c.MaxBody = 64 })
	big := `{"pad":"` + strings.Repeat("x", 100) + `"}`
	headers := []string{"X-Hub-Signature-256", "sha256=" + mac(ghSecret, big), "X-GitHub-Delivery", "big"}
	e.wantProblem(e.post("gh", strings.NewReader(big), headers...), http.StatusRequestEntityTooLarge, string(agentledger.CodeBodyTooLarge))
	// Without a Content-Length (chunked), the limit holds while reading.
	chunked := io.MultiReader(strings.NewReader(big[:10]), strings.NewReader(big[10:]))
	e.wantProblem(e.post("gh", chunked, headers...), http.StatusRequestEntityTooLarge, string(agentledger.CodeBodyTooLarge))
	e.wantCounts(0, 0)
	small := `{"ok":true}`
	if a := e.github(ghSecret, "small", "push", small); a.status != http.StatusAccepted {
		t.Fatalf("%d %s", a.status, a.raw)
	}

	// The default is 1 MiB.
	d := newEnv(t, nil, nil)
	huge := `{"pad":"` + strings.Repeat("x", webhooks.DefaultMaxBody) + `"}`
	d.wantProblem(d.github(ghSecret, "huge", "push", huge), http.StatusRequestEntityTooLarge, string(agentledger.CodeBodyTooLarge))
	d.wantCounts(0, 0)
}

func TestUnknownSource(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil, nil)
	e.wantProblem(e.post("nope", strings.NewReader(pushBody)), http.StatusNotFound, string(agentledger.CodeUnknownSource))
	if got := e.outcomesSeen(); len(got) != 0 {
		t.Errorf("unknown sources reported: %q", got)
	}
}

// After the janitor deleted a delivery's inbox row, a redelivery finds its
// task by the submission key; a different delivery under the same id is
// refused.
func TestRedeliveryAfterRetention(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil, nil)
	a := e.github(ghSecret, "old", "push", pushBody)
	if a.status != http.StatusAccepted {
		t.Fatalf("%d %s", a.status, a.raw)
	}
	if _, err := e.db.Exec(context.Background(), "DELETE FROM inbox"); err != nil {
		t.Fatal(err)
	}
	e.wantProblem(e.github(ghSecret, "old", "push", `{"other":true}`), http.StatusConflict, string(agentledger.CodeDeliveryConflict))
	e.wantCounts(0, 1)
	b := e.github(ghSecret, "old", "push", pushBody)
	if b.status != http.StatusOK || b.json["duplicate"] != true || b.taskID() != a.taskID() {
		t.Fatalf("%d %s, want a duplicate of task %d", b.status, b.raw, a.taskID())
	}
	e.task("gh", "old", a.taskID())
	e.wantCounts(1, 1)
}

// Secrets and signatures appear in no log record and no answer, whatever
// happens to the request.
func TestSecretsNeverShown(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil, func(c *webhooks.Config) { c.MaxBody = 4096 })
	var raws []string
	keep := func(a answer) { raws = append(raws, a.raw) }
	keep(e.github(ghSecret, "s1", "push", pushBody))
	keep(e.github(ghSecret, "s1", "push", pushBody))
	keep(e.github("wrong", "s2", "push", pushBody))
	keep(e.github(ghSecret, "s3", "push", `{"pad":"`+strings.Repeat("x", 5000)+`"}`))
	keep(e.slack(slackSecret, e.now.Add(-time.Hour), `{"type":"event_callback","event_id":"Ev1"}`))
	keep(e.slack(slackSecret, e.now, `{"type":"url_verification","challenge":"c"}`))
	keep(e.slack(slackSecret, e.now, `{"type":"event_callback","event_id":"Ev2","event":{"type":"message"}}`))
	keep(e.post("ci", strings.NewReader(`{}`), "X-Signature", mac(ciSecret, `{}`)))
	keep(e.post("ci", strings.NewReader(`{}`), "X-Signature", mac(ciSecret, `{}`), "X-Delivery", "c1"))
	keep(e.post("nope", strings.NewReader(`{}`)))

	logs := e.logs.String()
	for _, want := range []string{`"source":"gh"`, `"delivery_id":"s1"`, `"task_id"`, "webhook accepted",
		"webhook duplicate", "webhook rejected", string(agentledger.CodeBadSignature), string(agentledger.CodeStaleTimestamp),
		`"remote":"`} {
		if !strings.Contains(logs, want) {
			t.Errorf("logs lack %q:\n%s", want, logs)
		}
	}
	secrets := []string{ghSecret, slackSecret, ciSecret, mac(ghSecret, pushBody), mac(ciSecret, `{}`)}
	for _, s := range secrets {
		if strings.Contains(logs, s) {
			t.Errorf("the logs show %q:\n%s", s, logs)
		}
		for _, r := range raws {
			if strings.Contains(r, s) {
				t.Errorf("an answer shows %q: %s", s, r)
			}
		}
	}
}

func TestNew(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	ok := testSources()
	if _, err := webhooks.New(db, ok, webhooks.Config{}); err != nil {
		t.Fatal(err)
	}
	if ok[1].Tenant != "" || ok[2].MaxAttempts != 0 {
		t.Error("New changed the caller's sources")
	}
	edit := func(i int, f func(*webhooks.Source)) []webhooks.Source {
		s := testSources()
		f(&s[i])
		return s
	}
	for _, tc := range []struct {
		sources []webhooks.Source
		want    string
	}{
		{edit(0, func(s *webhooks.Source) { s.Name = "" }), "webhooks: source 0: name: is required"},
		{edit(0, func(s *webhooks.Source) { s.Name = "Git Hub" }), "name:"},
		{edit(1, func(s *webhooks.Source) { s.Name = "gh" }), `source 1 ("gh"): name: "gh" is used by another source`},
		{edit(0, func(s *webhooks.Source) { s.Type = "gitlab" }), `source 0 ("gh"): type:`},
		{edit(1, func(s *webhooks.Source) { s.Secret = "" }), `source 1 ("slack"): secret: is required`},
		{edit(2, func(s *webhooks.Source) { s.Header = "" }), `source 2 ("ci"): header: is required`},
		{edit(2, func(s *webhooks.Source) { s.Header = "X Sig" }), `source 2 ("ci"): header:`},
		{edit(2, func(s *webhooks.Source) { s.DeliveryHeader = "" }), `source 2 ("ci"): delivery_header: is required`},
		{edit(0, func(s *webhooks.Source) { s.Header = "X-Sig" }), `source 0 ("gh"): header: is only for type "hmac"`},
		{edit(0, func(s *webhooks.Source) { s.Kind = "" }), `source 0 ("gh"): kind: is required`},
		{edit(0, func(s *webhooks.Source) { s.Priority = 101 }), `source 0 ("gh"): priority:`},
		{edit(0, func(s *webhooks.Source) { s.Tenant = "a b" }), `source 0 ("gh"): tenant:`},
		{edit(0, func(s *webhooks.Source) { s.Payload = "raw" }), `source 0 ("gh"): payload:`},
	} {
		_, err := webhooks.New(db, tc.sources, webhooks.Config{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("error %v, want %q", err, tc.want)
			continue
		}
		for _, s := range []string{ghSecret, slackSecret, ciSecret} {
			if strings.Contains(err.Error(), s) {
				t.Errorf("error %v shows a secret", err)
			}
		}
	}
	if _, err := webhooks.New(db, ok, webhooks.Config{MaxBody: -1}); err == nil {
		t.Error("negative MaxBody accepted")
	}
	if _, err := webhooks.New(nil, ok, webhooks.Config{}); err == nil {
		t.Error("nil database accepted")
	}
}

func TestSourcePrintsNoSecret(t *testing.T) {
	t.Parallel()
	s := testSources()[2]
	var buf bytes.Buffer
	logger := slogJSON(&buf)
	logger.Info("source", "source", s, "ptr", &s, "all", testSources())
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	outs := []string{buf.String(), string(b)}
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%d"} {
		outs = append(outs, fmt.Sprintf(verb, s), fmt.Sprintf(verb, &s), fmt.Sprintf(verb, []webhooks.Source{s}))
	}
	for _, out := range outs {
		if strings.Contains(out, ciSecret) || strings.Contains(out, fmt.Sprintf("%x", ciSecret)) {
			t.Errorf("printed the secret: %s", out)
		}
	}
	if !strings.Contains(fmt.Sprint(s), `Secret:"[redacted]"`) || !strings.Contains(buf.String(), `"secret":"[redacted]"`) {
		t.Errorf("no redaction marker: %s / %s", fmt.Sprint(s), buf.String())
	}
}

// A validly signed delivery reusing a known delivery id with another body
// is a conflict (409), not a silent duplicate; nothing is stored.
func TestReusedDeliveryIDWithAnotherBody(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil, nil)
	if a := e.github(ghSecret, "d1", "push", pushBody); a.status != http.StatusAccepted {
		t.Fatalf("%d %s", a.status, a.raw)
	}
	e.wantProblem(e.github(ghSecret, "d1", "push", `{"ref":"refs/heads/evil"}`), http.StatusConflict, string(agentledger.CodeDeliveryConflict))
	e.wantCounts(1, 1)
}

// A generic HMAC source with a signed timestamp: the signature covers
// "<timestamp>.<delivery id>.<body>", so a captured delivery cannot be sent
// again under a fresh id, nor after MaxSkew; and a fresh id the sender
// signed is a new delivery even with a body seen before.
func TestHMACSourceWithSignedTimestamp(t *testing.T) {
	t.Parallel()
	src := webhooks.Source{Name: "ts", Type: webhooks.TypeHMAC, Secret: ciSecret, Header: "X-Signature",
		DeliveryHeader: "X-Delivery", TimestampHeader: "X-Timestamp", Kind: "ci_event"}
	e := newEnv(t, []webhooks.Source{src}, nil)
	body := `{"build": 42}`
	send := func(at time.Time, signedID, id string) answer {
		ts := strconv.FormatInt(at.Unix(), 10)
		return e.post("ts", strings.NewReader(body), "X-Signature", "sha256="+mac(ciSecret, ts+"."+signedID+"."+body),
			"X-Timestamp", ts, "X-Delivery", id)
	}
	if a := send(e.now, "b-42", "b-42"); a.status != http.StatusAccepted {
		t.Fatalf("signed delivery: %d %s", a.status, a.raw)
	}
	// The same signature with another delivery id, a body-only signature, a
	// stale or future timestamp: refused, nothing stored.
	e.wantProblem(send(e.now, "b-42", "b-43"), http.StatusUnauthorized, string(agentledger.CodeBadSignature))
	e.wantProblem(e.post("ts", strings.NewReader(body), "X-Signature", mac(ciSecret, body), "X-Delivery", "b-44",
		"X-Timestamp", strconv.FormatInt(e.now.Unix(), 10)), http.StatusUnauthorized, string(agentledger.CodeBadSignature))
	e.wantProblem(send(e.now.Add(-webhooks.MaxSkew-time.Second), "b-45", "b-45"), http.StatusUnauthorized, string(agentledger.CodeStaleTimestamp))
	e.wantProblem(send(e.now.Add(webhooks.MaxSkew+time.Second), "b-46", "b-46"), http.StatusUnauthorized, string(agentledger.CodeStaleTimestamp))
	// A delivery id with a '.' is refused: "a.1" with body "5" would sign
	// what "a" with body "1.5" does.
	e.wantProblem(send(e.now, "b.47", "b.47"), http.StatusBadRequest, string(agentledger.CodeInvalidDeliveryID))
	e.wantCounts(1, 1)
	// The sender's own fresh id signs a new delivery, whatever its body: a
	// second build event alike is a second task. The same id again is the
	// same delivery; with another body, a conflict.
	if a := send(e.now, "b-48", "b-48"); a.status != http.StatusAccepted {
		t.Fatalf("the same body under a fresh signed id: %d %s, want a new task", a.status, a.raw)
	}
	if a := send(e.now.Add(time.Minute), "b-48", "b-48"); a.status != http.StatusOK || a.json["duplicate"] != true {
		t.Fatalf("a redelivery: %d %s, want the duplicate", a.status, a.raw)
	}
	other := `{"build": 43}`
	ts := strconv.FormatInt(e.now.Unix(), 10)
	e.wantProblem(e.post("ts", strings.NewReader(other), "X-Signature", "sha256="+mac(ciSecret, ts+".b-48."+other),
		"X-Timestamp", ts, "X-Delivery", "b-48"), http.StatusConflict, string(agentledger.CodeDeliveryConflict))
	e.wantCounts(2, 2)
	gh := webhooks.Source{Name: "x", Type: webhooks.TypeGitHub, Secret: "s", Kind: "k", TimestampHeader: "X-Timestamp"}
	if err := gh.Validate(); err == nil || !strings.Contains(err.Error(), "timestamp_header") {
		t.Errorf("a timestamp header on a github source: %v", err)
	}
}

// JSON that parses but jsonb refuses — a lone surrogate, a number beyond
// numeric's range — is a 422 like \u0000, not a 503 the sender retries
// forever.
func TestUnstorableJSONIs422(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil, nil)
	for i, body := range []string{`{"a":"\ud800"}`, `{"a":1e1000000}`, `{"a":1` + strings.Repeat("0", 140000) + `}`} {
		id := fmt.Sprint("unstorable-", i)
		e.wantProblem(e.post("ci", strings.NewReader(body), "X-Signature", mac(ciSecret, body), "X-Delivery", id),
			http.StatusUnprocessableEntity, string(agentledger.CodeInvalid))
	}
	e.wantCounts(0, 0)
}

// A proxy may fold a header given twice into one line, its values joined
// by commas (RFC 9110 §5.3): that is two readings of one delivery, refused
// as two lines are, naming the header. A delivery id or an event name read
// from a header holds no comma, with or without the space after it.
func TestFoldedHeaderRefused(t *testing.T) {
	t.Parallel()
	ts := webhooks.Source{Name: "ts", Type: webhooks.TypeHMAC, Secret: ciSecret, Header: "X-Signature",
		DeliveryHeader: "X-Delivery", TimestampHeader: "X-Timestamp", Kind: "ci_event"}
	e := newEnv(t, append(testSources(), ts), nil)
	const ciBody = `{"build": 42}`
	for _, folded := range []string{", ", ","} {
		for _, tc := range []struct {
			name, header, code string
			send               func() answer
		}{
			{"github event", "X-GitHub-Event", string(agentledger.CodeMalformedRequest),
				func() answer { return e.github(ghSecret, "g1", "push"+folded+"ping", pushBody) }},
			{"github delivery", "X-GitHub-Delivery", string(agentledger.CodeInvalidDeliveryID),
				func() answer { return e.github(ghSecret, "g1"+folded+"g2", "push", pushBody) }},
			{"hmac event", "X-Event", string(agentledger.CodeMalformedRequest), func() answer {
				return e.post("ci", strings.NewReader(ciBody), "X-Signature", mac(ciSecret, ciBody),
					"X-Delivery", "c1", "X-Event", "build"+folded+"deploy")
			}},
			{"hmac delivery", "X-Delivery", string(agentledger.CodeInvalidDeliveryID), func() answer {
				return e.post("ci", strings.NewReader(ciBody), "X-Signature", mac(ciSecret, ciBody),
					"X-Delivery", "c1"+folded+"c2", "X-Event", "build")
			}},
			// Signed over the folded id, or over the sender's first one:
			// either way a 400 naming the header, not a bad signature.
			{"timestamped delivery, signed folded", "X-Delivery", string(agentledger.CodeInvalidDeliveryID), func() answer {
				at := strconv.FormatInt(e.now.Unix(), 10)
				return e.post("ts", strings.NewReader(ciBody), "X-Signature", mac(ciSecret, at+".t1"+folded+"t2."+ciBody),
					"X-Timestamp", at, "X-Delivery", "t1"+folded+"t2")
			}},
			{"timestamped delivery, signed first", "X-Delivery", string(agentledger.CodeInvalidDeliveryID), func() answer {
				at := strconv.FormatInt(e.now.Unix(), 10)
				return e.post("ts", strings.NewReader(ciBody), "X-Signature", mac(ciSecret, at+".t1."+ciBody),
					"X-Timestamp", at, "X-Delivery", "t1"+folded+"t2")
			}},
		} {
			a := tc.send()
			e.wantProblem(a, http.StatusBadRequest, tc.code)
			want := "the header " + tc.header + " holds a comma-separated list"
			if d, _ := a.json["detail"].(string); !strings.HasPrefix(d, want) {
				t.Errorf("%s folded with %q: detail %q, want it to start %q", tc.name, folded, d, want)
			}
		}
	}
	e.wantCounts(0, 0)
	// GitHub's own values, a GUID and an event name with '_', are taken.
	if a := e.github(ghSecret, "72d3162e-cc78-11e3-81ab-4c9367dc0958", "pull_request", pushBody); a.status != http.StatusAccepted {
		t.Fatalf("one event and one delivery id: %d %s", a.status, a.raw)
	}
	e.wantCounts(1, 1)
}

// Two header lines for the event are refused as two for the delivery id.
func TestEventHeaderGivenTwice(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil, nil)
	req, err := http.NewRequest(http.MethodPost, e.url+"/v1/hooks/gh", strings.NewReader(pushBody))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Hub-Signature-256", "sha256="+mac(ghSecret, pushBody))
	req.Header.Set("X-GitHub-Delivery", "e1")
	req.Header.Add("X-GitHub-Event", "push")
	req.Header.Add("X-GitHub-Event", "ping")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var p struct{ Code, Detail string }
	err = json.NewDecoder(resp.Body).Decode(&p)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusBadRequest || p.Code != string(agentledger.CodeMalformedRequest) ||
		p.Detail != "the header X-GitHub-Event is given 2 times" {
		t.Errorf("an event given twice: %d %+v (%v)", resp.StatusCode, p, err)
	}
	e.wantCounts(0, 0)
}
