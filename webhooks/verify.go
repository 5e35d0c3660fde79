package webhooks

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/agentledger/agentledger"
)

// Headers the github and slack types read.
const (
	// HeaderGitHubSignature carries "sha256=<hex HMAC-SHA256 of the body>".
	HeaderGitHubSignature = "X-Hub-Signature-256"
	// HeaderGitHubDelivery carries the delivery's GUID, the same on a
	// redelivery.
	HeaderGitHubDelivery = "X-GitHub-Delivery"
	// HeaderGitHubEvent names the event (push, pull_request, …).
	HeaderGitHubEvent = "X-GitHub-Event"
	// HeaderSlackSignature carries "v0=<hex HMAC-SHA256 of
	// v0:<timestamp>:<body>>".
	HeaderSlackSignature = "X-Slack-Signature"
	// HeaderSlackTimestamp carries the request's Unix time in seconds.
	HeaderSlackTimestamp = "X-Slack-Request-Timestamp"
)

// MaxSkew is how far a signed timestamp (Slack's, or a TypeHMAC source's
// with a TimestampHeader) may be from the handler's clock, either way,
// before the request is refused as a replay.
const MaxSkew = 5 * time.Minute

// SlackMaxSkew is MaxSkew, for Slack's requests.
const SlackMaxSkew = MaxSkew

// verify checks the signature of a delivery of s over its raw body, in
// constant time, before anything parses the body. now is the handler's
// clock. A nil problem means the delivery is authentic.
func (s *Source) verify(h http.Header, body []byte, now time.Time) *rejection {
	switch s.Type {
	case TypeGitHub:
		return s.verifyPrefixed(h, HeaderGitHubSignature, "sha256=", true, body)
	case TypeSlack:
		return s.verifySlack(h, body, now)
	default:
		if s.TimestampHeader != "" {
			return s.verifyTimestamped(h, body, now)
		}
		return s.verifyPrefixed(h, s.Header, "sha256=", false, body)
	}
}

// verifyTimestamped checks a TypeHMAC signature over
// "<timestamp>.<delivery id>.<body>", with the timestamp within MaxSkew.
func (s *Source) verifyTimestamped(h http.Header, body []byte, now time.Time) *rejection {
	sig, ts := h.Get(s.Header), h.Get(s.TimestampHeader)
	switch {
	case sig == "":
		return badSignature("the %s header is missing", s.Header)
	case ts == "":
		return badSignature("the %s header is missing", s.TimestampHeader)
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || sec < 0 {
		return badSignature("the %s header is not a Unix time in seconds", s.TimestampHeader)
	}
	// The id is signed: one given twice or folded is refused as such, not
	// as a signature that matches neither reading.
	id, p := oneHeader(h, s.DeliveryHeader, agentledger.CodeInvalidDeliveryID)
	if p != nil {
		return p
	}
	// With a '.' in the id, the signed string could be split elsewhere: id
	// "a.1" with body "5" signs what id "a" with body "1.5" does, and a
	// captured delivery would pass under another id.
	if strings.Contains(id, ".") {
		return newProblem(agentledger.CodeInvalidDeliveryID,
			"the delivery id (%s) must not contain '.': the signature covers \"<timestamp>.<delivery id>.<body>\"", s.DeliveryHeader)
	}
	hexSig, _ := strings.CutPrefix(sig, "sha256=")
	if !validMAC(s.Secret, hexSig, []byte(ts), []byte("."), []byte(id), []byte("."), body) {
		return badSignature("the %s header does not match the timestamp, the delivery id and the body", s.Header)
	}
	return checkSkew(s.TimestampHeader, sec, now)
}

// checkSkew refuses a signed timestamp more than MaxSkew from now.
func checkSkew(header string, sec int64, now time.Time) *rejection {
	if skew := now.Sub(time.Unix(sec, 0)); skew > MaxSkew || skew < -MaxSkew {
		return newProblem(agentledger.CodeStaleTimestamp, "the %s header is more than %s from the server's clock", header, MaxSkew)
	}
	return nil
}

// verifyPrefixed checks a header holding the hex HMAC-SHA256 of body after
// prefix (which may be left out unless required).
func (s *Source) verifyPrefixed(h http.Header, header, prefix string, required bool, body []byte) *rejection {
	sig := h.Get(header)
	if sig == "" {
		return badSignature("the %s header is missing", header)
	}
	hexSig, ok := strings.CutPrefix(sig, prefix)
	if !ok && required {
		return badSignature("the %s header is not %s<hex>", header, prefix)
	}
	if !validMAC(s.Secret, hexSig, body) {
		return badSignature("the %s header does not match the body", header)
	}
	return nil
}

// verifySlack checks Slack's v0 signature: the hex HMAC-SHA256 of
// "v0:<timestamp>:<body>" in X-Slack-Signature, with a timestamp within
// SlackMaxSkew of now.
func (s *Source) verifySlack(h http.Header, body []byte, now time.Time) *rejection {
	sig, ts := h.Get(HeaderSlackSignature), h.Get(HeaderSlackTimestamp)
	switch {
	case sig == "":
		return badSignature("the %s header is missing", HeaderSlackSignature)
	case ts == "":
		return badSignature("the %s header is missing", HeaderSlackTimestamp)
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || sec < 0 {
		return badSignature("the %s header is not a Unix time in seconds", HeaderSlackTimestamp)
	}
	hexSig, ok := strings.CutPrefix(sig, "v0=")
	if !ok {
		return badSignature("the %s header is not v0=<hex>", HeaderSlackSignature)
	}
	if !validMAC(s.Secret, hexSig, []byte("v0:"), []byte(ts), []byte(":"), body) {
		return badSignature("the %s header does not match the body", HeaderSlackSignature)
	}
	return checkSkew(HeaderSlackTimestamp, sec, now)
}

// validMAC reports whether hexSig is the hex HMAC-SHA256 of the
// concatenated parts under secret, comparing in constant time.
func validMAC(secret, hexSig string, parts ...[]byte) bool {
	got, err := hex.DecodeString(hexSig)
	if err != nil || len(got) != sha256.Size {
		return false
	}
	return hmac.Equal(got, sign(secret, parts...))
}

// sign is the HMAC-SHA256 of the concatenated parts under secret.
func sign(secret string, parts ...[]byte) []byte {
	mac := hmac.New(sha256.New, []byte(secret))
	for _, p := range parts {
		mac.Write(p)
	}
	return mac.Sum(nil)
}

func badSignature(format string, args ...any) *rejection {
	return newProblem(agentledger.CodeBadSignature, format, args...)
}
