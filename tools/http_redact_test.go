package tools_test

import (
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/agentledger/agentledger/grants"
	"github.com/agentledger/agentledger/tools"
)

// The operator's secrets for the downstream: a bearer token with the
// characters escapers rewrite, a Basic credential, and an API key of
// digits only, which a downstream may echo as a JSON number.
const (
	redactCred     = "sk/Live+T0ken=42/xyz"
	redactBearer   = "Bearer " + redactCred
	redactPassword = "pa55/w0rd!x"
	redactNumeric  = "73150428"
)

var redactBasic = "Basic " + base64.StdEncoding.EncodeToString([]byte("ops:"+redactPassword))

// phpJSON encodes v as PHP's json_encode does: slashes escaped.
func phpJSON(v any) string {
	b, _ := json.Marshal(v)
	return strings.ReplaceAll(string(b), "/", `\/`)
}

// hexBytes writes s's bytes as two hex digits each, sep between them.
func hexBytes(s, sep string) string {
	parts := make([]string, len(s))
	for i := range len(s) {
		parts[i] = fmt.Sprintf("%02x", s[i])
	}
	return strings.Join(parts, sep)
}

// uEscape writes the characters of s found in which as \u00xx.
func uEscape(s, which string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(which, r) {
			fmt.Fprintf(&b, `\u%04x`, r)
		} else {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// raw answers with bytes of its own, status line included.
func raw(w http.ResponseWriter, answer string) {
	conn, buf, err := w.(http.Hijacker).Hijack()
	if err != nil {
		panic(err)
	}
	defer conn.Close()
	_, _ = buf.WriteString(answer)
	_ = buf.Flush()
}

// exposed reports whether s shows a secret to a reader who undoes, with
// the standard library and in any order, the encodings the downstreams
// below apply.
func exposed(s string) bool {
	escape := regexp.MustCompile(`\\u[0-9a-fA-F]{4}|\\.`)
	unescape := func(e string) string {
		if len(e) == 6 {
			var r rune
			_, _ = fmt.Sscanf(e[2:], "%04x", &r)
			return string(r)
		}
		return e[1:]
	}
	b64 := regexp.MustCompile(`[A-Za-z0-9+/]{8,}={0,2}`)
	hexRun := regexp.MustCompile(`(?:[0-9a-fA-F]{2}[:\- ]?){4,}`) // 736b… or 73:6b:…
	notHex := regexp.MustCompile(`[^0-9a-fA-F]`)
	seen := map[string]bool{}
	var look func(s string, depth int) bool
	look = func(s string, depth int) bool {
		l := strings.ToLower(s)
		if strings.Contains(l, strings.ToLower(redactCred)) || strings.Contains(l, strings.ToLower(redactPassword)) ||
			strings.Contains(l, redactNumeric) {
			return true
		}
		if depth == 0 || seen[s] {
			return false
		}
		seen[s] = true
		controls := func(r rune) rune { // UTF-16's NULs, a binary format's bytes
			if r < 0x20 || r == 0x7f || r == utf8.RuneError {
				return -1
			}
			return r
		}
		forms := []string{escape.ReplaceAllStringFunc(s, unescape), html.UnescapeString(s), strings.Map(controls, s)}
		var v any
		if json.Unmarshal([]byte(s), &v) == nil {
			forms = append(forms, jsonStrings(v)...)
		}
		if u, err := url.QueryUnescape(s); err == nil {
			forms = append(forms, u)
		}
		if u, err := url.PathUnescape(s); err == nil {
			forms = append(forms, u)
		}
		for _, f := range b64.FindAllString(s, -1) {
			if b, err := base64.StdEncoding.DecodeString(f); err == nil {
				forms = append(forms, string(b))
			}
		}
		for _, f := range hexRun.FindAllString(s, -1) {
			f = notHex.ReplaceAllString(f, "")
			if b, err := hex.DecodeString(f[:len(f)&^1]); err == nil {
				forms = append(forms, string(b))
			}
		}
		for _, f := range forms {
			if look(f, depth-1) {
				return true
			}
		}
		return false
	}
	return look(s, 5)
}

// jsonStrings are every string and key in v.
func jsonStrings(v any) []string {
	switch v := v.(type) {
	case string:
		return []string{v}
	case []any:
		var out []string
		for _, e := range v {
			out = append(out, jsonStrings(e)...)
		}
		return out
	case map[string]any:
		var out []string
		for k, e := range v {
			out = append(append(out, k), jsonStrings(e)...)
		}
		return out
	}
	return nil
}

// A downstream that echoes the operator's secret headers, however it
// writes them, gets none of them into the ledger, the result or the
// error; what it said besides stays where it can.
func TestHTTPSecretEchoesRedacted(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t)
	json200 := func(w http.ResponseWriter, body string) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, body)
	}
	cases := []struct {
		name   string
		unsafe bool // unsafe_http: a transient failure is stored as unknown, with its error
		answer func(w http.ResponseWriter, auth, basic string)
		keep   string // what of the answer still shows, in the result or the error
	}{
		{"json with \\/ escapes", false, func(w http.ResponseWriter, auth, _ string) {
			json200(w, phpJSON(map[string]any{"ok": "kept", "headers": map[string]string{"Authorization": auth}}))
		}, "kept"},
		{"json with \\u00xx escapes", false, func(w http.ResponseWriter, auth, _ string) {
			json200(w, `{"ok":"kept","auth":"`+uEscape(auth, "sk/+=")+`","n":1.50}`)
		}, "1.50"},
		{"json inside a json string", false, func(w http.ResponseWriter, auth, _ string) {
			json200(w, phpJSON(map[string]any{"ok": "kept", "echo": phpJSON(map[string]string{"authorization": auth})}))
		}, "kept"},
		{"percent-encoded in a json string", false, func(w http.ResponseWriter, auth, _ string) {
			json200(w, phpJSON(map[string]any{"ok": "kept", "callback": "https://cb.example/?auth=" + url.QueryEscape(auth)}))
		}, "kept"},
		{"base64 in a json string", false, func(w http.ResponseWriter, auth, _ string) {
			json200(w, phpJSON(map[string]any{"ok": "kept", "raw": base64.StdEncoding.EncodeToString([]byte("Authorization: " + auth + "\r\n"))}))
		}, "kept"},
		{"json numbers", false, func(w http.ResponseWriter, _, _ string) {
			// The downstream echoes X-Api-Key (sent, as checked below) as
			// a number, and within a longer one.
			json200(w, `{"ok":"kept","key":`+redactNumeric+`,"id":-9`+redactNumeric+`1e3,"n":1.50}`)
		}, "1.50"},
		{"json number stored without its exponent", false, func(w http.ResponseWriter, _, _ string) {
			// Not in the text as written, but in jsonb's: 73150428.
			json200(w, `{"ok":"kept","key":`+redactNumeric[:4]+`.`+redactNumeric[4:]+`e4,"n":5e-3}`)
		}, "0.005"},
		{"colon-separated hex in a json string", false, func(w http.ResponseWriter, auth, _ string) {
			json200(w, phpJSON(map[string]any{"ok": "kept", "fingerprint": hexBytes(auth, ":")}))
		}, "kept"},
		{"space-separated hex, upper case, in a json string", false, func(w http.ResponseWriter, _, basic string) {
			b, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(basic, "Basic "))
			json200(w, phpJSON(map[string]any{"ok": "kept", "dump": strings.ToUpper(hexBytes(string(b), " "))}))
		}, "kept"},
		{"dash-separated hex in a text body", false, func(w http.ResponseWriter, auth, _ string) {
			w.Header().Set("Content-Type", "text/plain")
			_, _ = io.WriteString(w, "you sent "+hexBytes(strings.TrimPrefix(auth, "Bearer "), "-")+"\n")
		}, "redacted"},
		{"json, upper case", false, func(w http.ResponseWriter, auth, _ string) {
			json200(w, phpJSON(map[string]any{"ok": "kept", "h": strings.ToUpper(auth)}))
		}, "kept"},
		{"basic credential decoded", false, func(w http.ResponseWriter, _, basic string) {
			b, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(basic, "Basic "))
			user, pw, _ := strings.Cut(string(b), ":")
			json200(w, phpJSON(map[string]any{"user": user, "password": pw}))
		}, "ops"},
		{"html text body, character references", false, func(w http.ResponseWriter, auth, _ string) {
			w.Header().Set("Content-Type", "text/html")
			r := strings.NewReplacer("/", "&#x2F;", "+", "&#43;", "=", "&#61;")
			_, _ = io.WriteString(w, "<p>You sent "+r.Replace(auth)+"</p>")
		}, "redacted"},
		{"form-encoded text body", false, func(w http.ResponseWriter, auth, _ string) {
			w.Header().Set("Content-Type", "text/plain")
			_, _ = io.WriteString(w, "authorization="+url.QueryEscape(auth)+"&ok=kept")
		}, "redacted"},
		{"text body, as sent", false, func(w http.ResponseWriter, auth, _ string) {
			w.Header().Set("Content-Type", "text/plain")
			_, _ = io.WriteString(w, "kept: "+auth)
		}, "kept: [redacted]"},
		{"utf-16 text body", false, func(w http.ResponseWriter, auth, _ string) {
			// ASCII and NUL bytes: valid UTF-8, but not text to search.
			w.Header().Set("Content-Type", "text/plain; charset=utf-16le")
			for _, u := range utf16.Encode([]rune("authorization: " + auth)) {
				_, _ = w.Write([]byte{byte(u), byte(u >> 8)})
			}
		}, "redacted"},
		{"binary body", false, func(w http.ResponseWriter, auth, _ string) {
			w.Header().Set("Content-Type", "application/octet-stream")
			_, _ = io.WriteString(w, "\x00\x01"+strings.TrimPrefix(auth, "Bearer ")[:4]+"\x02"+strings.TrimPrefix(auth, "Bearer ")[4:])
		}, "redacted"},
		{"gzip the caller asked for", false, func(w http.ResponseWriter, auth, _ string) {
			// Not readable as text, so not kept (the transport unzips
			// only what it asked for itself).
			w.Header().Set("Content-Encoding", "gzip")
			z := gzip.NewWriter(w)
			_, _ = io.WriteString(z, phpJSON(map[string]string{"auth": auth}))
			_ = z.Close()
		}, "redacted"},
		{"location of a 302", false, func(w http.ResponseWriter, auth, _ string) {
			w.Header().Set("Location", "https://elsewhere.example/cb?token="+url.QueryEscape(auth))
			w.WriteHeader(http.StatusFound)
		}, "not followed"},
		{"error body of a 500", true, func(w http.ResponseWriter, auth, _ string) {
			w.WriteHeader(http.StatusInternalServerError)
			_, _ = io.WriteString(w, phpJSON(map[string]string{"error": `bad header "` + auth + `"`}))
		}, "500"},
		{"body of a 400", false, func(w http.ResponseWriter, auth, _ string) {
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, phpJSON(map[string]string{"message": "invalid token", "got": auth}))
		}, "invalid token"},
		{"reason phrase", false, func(w http.ResponseWriter, auth, _ string) {
			raw(w, "HTTP/1.1 401 "+url.QueryEscape(auth)+"\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
		}, "401"},
		{"malformed answer quoted by the transport", true, func(w http.ResponseWriter, auth, _ string) {
			raw(w, strings.TrimPrefix(auth, "Bearer ")+" 200 OK\r\n\r\n")
		}, "could not be read"},
	}
	rec := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		i := 0
		_, _ = fmt.Sscanf(r.URL.Path, "/%d", &i)
		cases[i].answer(w, r.Header.Get("Authorization"), r.Header.Get("Proxy-Authorization"))
	})
	host := hostOf(rec.URL)
	keyed, unsafe := e.http(tools.HTTPConfig{AllowedHosts: []string{host}, UnsafeAllowedHosts: []string{host},
		HostHeaders: map[string]map[string]string{host: {"Authorization": redactBearer, "Proxy-Authorization": redactBasic,
			"X-Api-Key": redactNumeric}}})
	grant := &grants.Grant{Tools: []string{"http_request", "unsafe_http"}, Hosts: []grants.Host{{URL: host, SecretHeaders: true}}}
	task := e.task()
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tool, step := keyed, fmt.Sprintf("tool/%d", i)
			if c.unsafe {
				tool = unsafe
			}
			// Every call asks for gzip, as a tenant may; one downstream zips.
			args := fmt.Sprintf(`{"method":"POST","url":"%s/%d","body":{},"headers":{"Accept-Encoding":"gzip"}}`, rec.URL, i)
			res, err := tools.Invoke(ctx, e.Ledger, tool, tools.Call{Task: task, StepPath: step, Args: []byte(args), Grant: grant})
			var msg string
			if err != nil {
				msg = err.Error()
			}
			var stored string
			if qerr := e.DB.QueryRow(ctx, `SELECT concat_ws(E'\n', state, result::text, error, note) FROM ledger
				WHERE task_id = $1 AND step_path = $2`, task.ID, step).Scan(&stored); qerr != nil {
				t.Fatalf("no ledger row: %v", qerr)
			}
			for what, s := range map[string]string{"result": string(res.Body), "error": msg, "ledger": stored} {
				if exposed(s) {
					t.Errorf("%s shows a secret:\n%s", what, s)
				}
			}
			t.Logf("result %s\nerror %s", res.Body, msg)
			if !strings.Contains(string(res.Body)+msg, c.keep) {
				t.Errorf("%q is lost: result %s, error %v", c.keep, res.Body, err)
			}
		})
	}
	for _, r := range rec.requests() {
		if r.header.Get("Authorization") != redactBearer || r.header.Get("Proxy-Authorization") != redactBasic ||
			r.header.Get("X-Api-Key") != redactNumeric {
			t.Fatalf("the secrets were not sent: %v", r.header)
		}
	}
}

// A call that carried no secret header is kept as the downstream wrote
// it: no decoding, no rewriting, the same errors.
func TestHTTPNoSecretsKeptAsSent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t)
	const body = `{"b" : "x\/y\u00e9 Bearer sk\/Live",  "n": 1.50e0, "list":[1 , 2]}`
	rec := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/ok":
			_, _ = io.WriteString(w, body)
		case "/moved":
			w.Header().Set("Location", "https://elsewhere.example/?t=a%2Fb")
			w.WriteHeader(http.StatusFound)
		default:
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, body)
		}
	})
	host := hostOf(rec.URL)
	secrets := map[string]map[string]string{host: {"Authorization": redactBearer}}
	withHeaders, _ := e.http(tools.HTTPConfig{AllowedHosts: []string{host}, HostHeaders: secrets})
	without, _ := e.http(tools.HTTPConfig{AllowedHosts: []string{host}})
	notGranted := &grants.Grant{Tools: []string{"http_request"}, Hosts: []grants.Host{{URL: host}}}
	task := e.task()
	for i, tc := range []struct {
		tool  *tools.HTTPTool
		grant *grants.Grant
	}{{withHeaders, notGranted}, {without, nil}} {
		get := func(step, path string) (string, []byte, error) {
			step = fmt.Sprintf("tool/%d/%s", i, step)
			res, err := tools.Invoke(ctx, e.Ledger, tc.tool, tools.Call{Task: task, StepPath: step, Grant: tc.grant,
				Args: []byte(fmt.Sprintf(`{"method":"GET","url":%q}`, rec.URL+path))})
			return step, res.Body, err
		}
		// The result is what the ledger stored: jsonb of the body as sent.
		step, got, err := get("ok", "/ok")
		var stored, asSent string
		if qerr := e.DB.QueryRow(ctx, `SELECT result->>'body', $3::jsonb::text FROM ledger WHERE task_id = $1 AND step_path = $2`,
			task.ID, step, body).Scan(&stored, &asSent); qerr != nil {
			t.Fatal(qerr)
		}
		if err != nil || string(got) != asSent || stored != asSent {
			t.Fatalf("%d: result %s %v, stored %s, want the body as sent, %s", i, got, err, stored, asSent)
		}
		_, _, err = get("moved", "/moved")
		if want := fmt.Sprintf(`http_request: GET %s/moved: 302 Found: redirect to "https://elsewhere.example/?t=a%%2Fb" not followed`, rec.URL); err == nil || !strings.HasSuffix(err.Error(), want) {
			t.Fatalf("%d: %v, want it to end %s", i, err, want)
		}
		_, _, err = get("bad", "/bad")
		if want := fmt.Sprintf(`http_request: GET %s/bad: 400 Bad Request: %s`, rec.URL, strings.Join(strings.Fields(body), " ")); err == nil || !strings.HasSuffix(err.Error(), want) {
			t.Fatalf("%d: %v, want it to end %s", i, err, want)
		}
	}
	for _, r := range rec.requests() {
		if r.header.Get("Authorization") != "" {
			t.Fatalf("a secret went to a tenant not granted it: %v", r.header)
		}
	}
}

// An answer cut at the size limit may be cut through a secret: for a call
// that carried secrets, no part of it is quoted.
func TestHTTPSecretCutAtLimitNotQuoted(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t)
	rec := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusBadGateway)
		_, _ = io.WriteString(w, "upstream refused "+r.Header.Get("Authorization")+" and more")
	})
	host := hostOf(rec.URL)
	// The limit falls in the credential's middle: "...Bearer sk/Live+T0k".
	limit := int64(len("upstream refused Bearer sk/Live+T0k")) - 1
	tool, _ := e.http(tools.HTTPConfig{AllowedHosts: []string{host}, MaxResponseBytes: limit,
		HostHeaders: map[string]map[string]string{host: {"Authorization": redactBearer}}})
	_, err := tools.Invoke(ctx, e.Ledger, tool, call(e.task(), "tool/0", fmt.Sprintf(`{"method":"GET","url":%q}`, rec.URL)))
	if err == nil || strings.Contains(err.Error(), redactCred[:8]) || !strings.Contains(err.Error(), "502") {
		t.Fatalf("%v: want a 502 quoting nothing of the secret", err)
	}
}

// An answer to a call that carried secrets but holds none of them is kept
// whole, however much it looks encoded.
func TestHTTPSecretCallKeepsCleanAnswer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t)
	blob := make([]byte, 96<<10)
	for i := range blob {
		blob[i] = byte(i * 7919 >> 3)
	}
	body := phpJSON(map[string]any{
		"url":    "https://api.example/v1/items?q=a%2Fb+c&next=eyJwYWdlIjoyfQ%3D%3D",
		"html":   "Tom &amp; Jerry &#x2F; &lt;b&gt;",
		"nested": phpJSON(map[string]any{"path": "/a/b", "n": 12}),
		"image":  "data:image/png;base64," + base64.StdEncoding.EncodeToString(blob),
		"hex":    fmt.Sprintf("%x", blob[:512]),
		"token":  "Bearer " + strings.Repeat("Zm9vYmFy", 8),
		"words":  strings.Repeat("internationalisation characteristically ", 200),
	})
	body = strings.Replace(body, "{", `{"n":1.50e0,"big":123456789012345678901234567890,`, 1)
	rec := newRecorder(t, func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, body) })
	host := hostOf(rec.URL)
	tool, _ := e.http(tools.HTTPConfig{AllowedHosts: []string{host},
		HostHeaders: map[string]map[string]string{host: {"Authorization": redactBearer}}})
	res, err := tools.Invoke(ctx, e.Ledger, tool, call(e.task(), "tool/0", fmt.Sprintf(`{"method":"GET","url":%q}`, rec.URL)))
	var asSent string
	if qerr := e.DB.QueryRow(ctx, `SELECT $1::jsonb::text`, body).Scan(&asSent); qerr != nil {
		t.Fatal(qerr)
	}
	if err != nil || string(res.Body) != asSent {
		t.Fatalf("the answer was changed (%v):\n%.300s", err, res.Body)
	}
}
