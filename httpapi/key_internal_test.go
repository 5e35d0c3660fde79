package httpapi

import (
	"bytes"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestParseKey(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		values []string
		key    string
		err    error
	}{
		{nil, "", nil},
		{[]string{"abc"}, "abc", nil},
		{[]string{" \tabc \t"}, "abc", nil},
		{[]string{"a b"}, "a b", nil},
		{[]string{`"a b"`}, "a b", nil},
		{[]string{`"a\"b\\c"`}, `a"b\c`, nil},
		{[]string{`"a,b"`}, "a,b", nil},
		{[]string{`"x" `}, "x", nil},
		{[]string{`x"y`}, `x"y`, nil},
		{[]string{strings.Repeat("k", 255)}, strings.Repeat("k", 255), nil},
		{[]string{""}, "", errKeyInvalid},
		{[]string{`""`}, "", errKeyInvalid},
		{[]string{strings.Repeat("k", 256)}, "", errKeyInvalid},
		{[]string{"caf\xc3\xa9"}, "", errKeyInvalid},
		{[]string{"a\x7fb"}, "", errKeyInvalid},
		{[]string{`"a\tb"`}, "", errKeyInvalid},
		{[]string{`"a\`}, "", errKeyInvalid},
		{[]string{`"abc`}, "", errKeyInvalid},
		{[]string{`"a"b`}, "", errKeyInvalid},
		{[]string{`"a";p=1`}, "", errKeyInvalid},
		{[]string{"a", "a"}, "", errKeyDuplicated},
		{[]string{"a,b"}, "", errKeyDuplicated},
		{[]string{`"a", "b"`}, "", errKeyDuplicated},
		{[]string{`"a",`}, "", errKeyDuplicated},
	} {
		h := http.Header{}
		for _, v := range c.values {
			h.Add(KeyHeader, v)
		}
		key, err := parseKey(h)
		if key != c.key || !errors.Is(err, c.err) || (c.err == nil && err != nil) {
			t.Errorf("parseKey(%q) = %q, %v; want %q, %v", c.values, key, err, c.key, c.err)
		}
	}
}

func TestFingerprint(t *testing.T) {
	t.Parallel()
	fp := func(method, path, body string) []byte {
		t.Helper()
		b, err := fingerprint(method, path, []byte(body))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	base := fp("POST", "/v1/tasks", `{"a":1,"b":[1,2]}`)
	if !bytes.Equal(base, fp("POST", "/v1/tasks", " {\"b\": [1, 2],\n\"a\": 1} ")) {
		t.Error("key order or whitespace changed the fingerprint")
	}
	for _, other := range [][]byte{
		fp("POST", "/v1/tasks", `{"a":1,"b":[2,1]}`),
		fp("POST", "/v1/tasks", `{"a":1.0,"b":[1,2]}`),
		fp("PUT", "/v1/tasks", `{"a":1,"b":[1,2]}`),
		fp("POST", "/v1/tasks/1", `{"a":1,"b":[1,2]}`),
	} {
		if bytes.Equal(base, other) {
			t.Error("different requests share a fingerprint")
		}
	}
	if !bytes.Equal(fp("POST", "/v1/tasks/1/cancel", ""), fp("POST", "/v1/tasks/1/cancel", " \n")) {
		t.Error("an empty body and whitespace differ")
	}
	if bytes.Equal(fp("POST", "/v1/tasks/1/cancel", ""), fp("POST", "/v1/tasks/2/cancel", "")) {
		t.Error("two tasks' cancels share a fingerprint")
	}
	for _, bad := range []string{`{`, `{"a":1}{}`, `{"a":1,"a":2}`, `nope`} {
		if _, err := fingerprint("POST", "/v1/tasks", []byte(bad)); !errors.Is(err, errMalformed) {
			t.Errorf("fingerprint(%q): %v, want errMalformed", bad, err)
		}
	}
}

func TestSubmissionKey(t *testing.T) {
	t.Parallel()
	at := time.Date(2025, 1, 2, 3, 4, 5, 678901000, time.UTC)
	h := &heldKey{keyRequest: keyRequest{key: "order 42"}, createdAt: at}
	if got := h.submissionKey(); got != "api:1735787045678901:order 42" {
		t.Errorf("submissionKey = %q", got)
	}
	later := &heldKey{keyRequest: keyRequest{key: "order 42"}, createdAt: at.Add(time.Microsecond)}
	if later.submissionKey() == h.submissionKey() {
		t.Error("two records of one key share a submission key")
	}
	long := &heldKey{keyRequest: keyRequest{key: strings.Repeat("k", 255)}, createdAt: at}
	if got := long.submissionKey(); len(got) > maxKeyLen || !strings.HasPrefix(got, "api-sha256:1735787045678901:") {
		t.Errorf("long submissionKey = %q", got)
	}
}

func TestStorable(t *testing.T) {
	t.Parallel()
	for status, want := range map[int]bool{200: true, 201: true, 202: true, 400: true, 404: true, 409: true,
		422: true, 408: false, 429: false, 500: false, 503: false} {
		if storable(status) != want {
			t.Errorf("storable(%d) = %v", status, !want)
		}
	}
}

func TestCursor(t *testing.T) {
	t.Parallel()
	for _, id := range []int64{1, 42, 1 << 62} {
		got, err := decodeCursor(encodeCursor(id))
		if err != nil || got != id {
			t.Errorf("cursor round trip of %d: %d, %v", id, got, err)
		}
	}
	for _, bad := range []string{"", "42", "djEuMA", "djEueA", "!!"} {
		if _, err := decodeCursor(bad); !errors.Is(err, errBadParameter) {
			t.Errorf("decodeCursor(%q): %v", bad, err)
		}
	}
}
