package httpapi

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/agentledger/agentledger/canonjson"
)

// KeyHeader is the request header that makes a mutating request idempotent.
const KeyHeader = "Idempotency-Key"

// ReplayedHeader is set to "true" on an answer replayed from a stored one.
const ReplayedHeader = "Idempotent-Replayed"

// maxKeyLen is the longest key accepted, in bytes (= characters: ASCII).
const maxKeyLen = 255

// parseKey reads the Idempotency-Key header of h; "" when there is none.
// The value is an RFC 8941 sf-string ("…", with \" and \\ escapes) or a
// bare value; either way the key is 1-255 printable ASCII characters
// (0x20-0x7E). A header given twice, or a comma-separated list, is
// errKeyDuplicated (a bare key cannot hold a comma: quote it); anything else
// malformed is errKeyInvalid. Errors never echo the key.
func parseKey(h http.Header) (string, error) {
	vs := h.Values(KeyHeader)
	switch {
	case len(vs) == 0:
		return "", nil
	case len(vs) > 1:
		return "", fmt.Errorf("%w: the header was given %d times", errKeyDuplicated, len(vs))
	}
	v := strings.Trim(vs[0], " \t")
	if v == "" {
		return "", fmt.Errorf("%w: it is empty", errKeyInvalid)
	}
	key := v
	if v[0] == '"' {
		k, rest, err := parseSFString(v)
		if err != nil {
			return "", err
		}
		switch rest = strings.TrimLeft(rest, " \t"); {
		case strings.HasPrefix(rest, ","):
			return "", fmt.Errorf("%w: the value is a list", errKeyDuplicated)
		case rest != "":
			return "", fmt.Errorf("%w: unexpected characters after the quoted string", errKeyInvalid)
		}
		key = k
	} else if strings.Contains(v, ",") {
		return "", fmt.Errorf("%w: the value is a comma-separated list (quote a key that holds a comma)", errKeyDuplicated)
	}
	switch {
	case key == "":
		return "", fmt.Errorf("%w: it is empty", errKeyInvalid)
	case len(key) > maxKeyLen:
		return "", fmt.Errorf("%w: it is %d characters long", errKeyInvalid, len(key))
	}
	for i := 0; i < len(key); i++ {
		if key[i] < 0x20 || key[i] > 0x7e {
			return "", fmt.Errorf("%w: character %d is not printable ASCII", errKeyInvalid, i+1)
		}
	}
	return key, nil
}

// parseSFString parses the sf-string (RFC 8941 section 4.2.5) at the start
// of v and returns its value and what follows it.
func parseSFString(v string) (string, string, error) {
	var b strings.Builder
	for i := 1; i < len(v); i++ {
		switch c := v[i]; {
		case c == '\\':
			if i+1 == len(v) || (v[i+1] != '"' && v[i+1] != '\\') {
				return "", "", fmt.Errorf("%w: a quoted key may only escape \" and \\", errKeyInvalid)
			}
			i++
			b.WriteByte(v[i])
		case c == '"':
			return b.String(), v[i+1:], nil
		case c < 0x20 || c > 0x7e:
			return "", "", fmt.Errorf("%w: character %d is not printable ASCII", errKeyInvalid, i+1)
		default:
			b.WriteByte(c)
		}
	}
	return "", "", fmt.Errorf("%w: the quoted string is not closed", errKeyInvalid)
}

// fingerprint identifies a request for its key: SHA-256 over the method,
// the request path (the route with its values: a key used to cancel task 1
// cannot replay for task 2) and the canonical JSON hash of the body, so
// that key order and whitespace do not matter. An empty body hashes as
// nothing; a body that is not JSON is errMalformed.
func fingerprint(method, path string, body []byte) ([]byte, error) {
	h := sha256.New()
	_, _ = io.WriteString(h, "agentledger.idempotency.v1\x00"+method+"\x00"+path+"\x00")
	if len(bytes.TrimSpace(body)) > 0 {
		bh, err := canonjson.Hash(body)
		if err != nil {
			return nil, fmt.Errorf("%w: the body is not JSON: %s", errMalformed, strings.TrimPrefix(err.Error(), "canonjson: "))
		}
		h.Write(bh)
	}
	return h.Sum(nil), nil
}
