package webhooks

import (
	"encoding/hex"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/agentledger/agentledger"
)

// GitHub's worked example, from "Validating webhook deliveries"
// (docs.github.com/en/webhooks/using-webhooks/validating-webhook-deliveries).
const (
	githubDocSecret = "It's a Secret to Everybody"
	githubDocBody   = "Hello, World!"
	githubDocSig    = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
)

// Slack's worked example, from "Verifying requests from Slack"
// (api.slack.com/authentication/verifying-requests-from-slack).
const (
	slackDocSecret = "8f742231b10e8888abcd99yyyzzz85a5"
	slackDocTS     = "1531420618"
	slackDocBody   = "token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c"
	slackDocSig    = "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503"
)

func header(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i < len(kv); i += 2 {
		h.Set(kv[i], kv[i+1])
	}
	return h
}

func TestGitHubDocumentationVector(t *testing.T) {
	t.Parallel()
	if got := "sha256=" + hex.EncodeToString(sign(githubDocSecret, []byte(githubDocBody))); got != githubDocSig {
		t.Fatalf("sign = %s, want %s", got, githubDocSig)
	}
	s := &Source{Name: "gh", Type: TypeGitHub, Secret: githubDocSecret}
	if p := s.verify(header(HeaderGitHubSignature, githubDocSig), []byte(githubDocBody), time.Now()); p != nil {
		t.Fatalf("GitHub's vector refused: %+v", p)
	}
	for name, h := range map[string]http.Header{
		"missing":      header(),
		"no prefix":    header(HeaderGitHubSignature, githubDocSig[len("sha256="):]),
		"sha1 prefix":  header(HeaderGitHubSignature, "sha1="+githubDocSig[len("sha256="):]),
		"one bit off":  header(HeaderGitHubSignature, githubDocSig[:len(githubDocSig)-1]+"f"),
		"truncated":    header(HeaderGitHubSignature, githubDocSig[:len(githubDocSig)-2]),
		"not hex":      header(HeaderGitHubSignature, "sha256=zz"),
		"empty digest": header(HeaderGitHubSignature, "sha256="),
	} {
		if p := s.verify(h, []byte(githubDocBody), time.Now()); p == nil || p.Code != string(agentledger.CodeBadSignature) || p.Status != http.StatusUnauthorized {
			t.Errorf("%s: %+v, want 401 %s", name, p, string(agentledger.CodeBadSignature))
		}
	}
	if p := s.verify(header(HeaderGitHubSignature, githubDocSig), []byte(githubDocBody+" "), time.Now()); p == nil {
		t.Error("a changed body verified")
	}
	other := &Source{Name: "gh", Type: TypeGitHub, Secret: githubDocSecret + "!"}
	if p := other.verify(header(HeaderGitHubSignature, githubDocSig), []byte(githubDocBody), time.Now()); p == nil {
		t.Error("another secret verified")
	}
}

func TestSlackDocumentationVector(t *testing.T) {
	t.Parallel()
	if got := "v0=" + hex.EncodeToString(sign(slackDocSecret, []byte("v0:"+slackDocTS+":"+slackDocBody))); got != slackDocSig {
		t.Fatalf("sign = %s, want %s", got, slackDocSig)
	}
	sec, _ := strconv.ParseInt(slackDocTS, 10, 64)
	at := time.Unix(sec, 0)
	s := &Source{Name: "slack", Type: TypeSlack, Secret: slackDocSecret}
	h := header(HeaderSlackSignature, slackDocSig, HeaderSlackTimestamp, slackDocTS)
	for _, tc := range []struct {
		name string
		h    http.Header
		body string
		now  time.Time
		code string // "" verifies
	}{
		{"at the timestamp", h, slackDocBody, at, ""},
		{"4m59s later", h, slackDocBody, at.Add(SlackMaxSkew - time.Second), ""},
		{"exactly 5m later", h, slackDocBody, at.Add(SlackMaxSkew), ""},
		{"5m01s later", h, slackDocBody, at.Add(SlackMaxSkew + time.Second), string(agentledger.CodeStaleTimestamp)},
		{"5m01s earlier", h, slackDocBody, at.Add(-SlackMaxSkew - time.Second), string(agentledger.CodeStaleTimestamp)},
		{"an hour later", h, slackDocBody, at.Add(time.Hour), string(agentledger.CodeStaleTimestamp)},
		{"other timestamp", header(HeaderSlackSignature, slackDocSig, HeaderSlackTimestamp, "1531420619"), slackDocBody, at, string(agentledger.CodeBadSignature)},
		{"changed body", h, slackDocBody + "x", at, string(agentledger.CodeBadSignature)},
		{"no signature", header(HeaderSlackTimestamp, slackDocTS), slackDocBody, at, string(agentledger.CodeBadSignature)},
		{"no timestamp", header(HeaderSlackSignature, slackDocSig), slackDocBody, at, string(agentledger.CodeBadSignature)},
		{"bad timestamp", header(HeaderSlackSignature, slackDocSig, HeaderSlackTimestamp, "soon"), slackDocBody, at, string(agentledger.CodeBadSignature)},
		{"no v0 prefix", header(HeaderSlackSignature, slackDocSig[3:], HeaderSlackTimestamp, slackDocTS), slackDocBody, at, string(agentledger.CodeBadSignature)},
	} {
		p := s.verify(tc.h, []byte(tc.body), tc.now)
		switch {
		case tc.code == "" && p != nil:
			t.Errorf("%s: refused: %+v", tc.name, p)
		case tc.code != "" && (p == nil || p.Code != tc.code || p.Status != http.StatusUnauthorized):
			t.Errorf("%s: %+v, want 401 %s", tc.name, p, tc.code)
		}
	}
}

func TestHMACVerify(t *testing.T) {
	t.Parallel()
	s := &Source{Name: "ci", Type: TypeHMAC, Secret: "k", Header: "X-Signature", DeliveryHeader: "X-Delivery"}
	body := []byte(`{"a":1}`)
	sig := hex.EncodeToString(sign("k", body))
	for _, v := range []string{sig, "sha256=" + sig} {
		if p := s.verify(header("X-Signature", v), body, time.Now()); p != nil {
			t.Errorf("%s refused: %+v", v, p)
		}
	}
	for _, v := range []string{"", "sha1=" + sig, sig[:10], hex.EncodeToString(sign("K", body))} {
		if p := s.verify(header("X-Signature", v), body, time.Now()); p == nil || p.Code != string(agentledger.CodeBadSignature) {
			t.Errorf("%q: %+v, want %s", v, p, string(agentledger.CodeBadSignature))
		}
	}
}
