package webhooks

import (
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentledger/agentledger"
)

// fuzzSources are the supported kinds of source: GitHub, Slack, and the
// generic HMAC with and without a signed timestamp.
func fuzzSources(secret string) []*Source {
	return []*Source{
		{Name: "gh", Type: TypeGitHub, Secret: secret},
		{Name: "slack", Type: TypeSlack, Secret: secret},
		{Name: "ci", Type: TypeHMAC, Secret: secret, Header: "X-Signature", DeliveryHeader: "X-Delivery"},
		{Name: "ci-ts", Type: TypeHMAC, Secret: secret, Header: "X-Signature", DeliveryHeader: "X-Delivery",
			TimestampHeader: "X-Timestamp"},
	}
}

// signed is a delivery to s signed with s's secret: its headers, and the
// names of the signature header and of the headers the signature covers.
func signed(s *Source, body []byte, ts int64, id string) (h http.Header, sigHeader string, covered []string) {
	h = http.Header{}
	sec := strconv.FormatInt(ts, 10)
	switch {
	case s.Type == TypeGitHub:
		h.Set(HeaderGitHubSignature, "sha256="+hex.EncodeToString(sign(s.Secret, body)))
		h.Set(HeaderGitHubDelivery, id)
		return h, HeaderGitHubSignature, nil
	case s.Type == TypeSlack:
		h.Set(HeaderSlackSignature, "v0="+hex.EncodeToString(sign(s.Secret, []byte("v0:"+sec+":"), body)))
		h.Set(HeaderSlackTimestamp, sec)
		return h, HeaderSlackSignature, []string{HeaderSlackTimestamp}
	case s.TimestampHeader != "":
		h.Set(s.Header, "sha256="+hex.EncodeToString(sign(s.Secret, []byte(sec+"."+id+"."), body)))
		h.Set(s.TimestampHeader, sec)
		h.Set(s.DeliveryHeader, id)
		return h, s.Header, []string{s.TimestampHeader, s.DeliveryHeader}
	}
	h.Set(s.Header, hex.EncodeToString(sign(s.Secret, body)))
	h.Set(s.DeliveryHeader, id)
	return h, s.Header, nil
}

// FuzzVerify checks each source's signature verification on any body,
// timestamp, delivery id and raw header values: it never panics; a
// signature made with the right secret over the body verifies; a change
// of any one byte of the body, of the signature or of a header the
// signature covers fails it; and no answer holds the secret.
func FuzzVerify(f *testing.F) {
	f.Add(githubDocSecret, []byte(githubDocBody), uint32(1531420618), "72d3162e-cc78-11e3-81ab-4c9367dc0958",
		githubDocSig, slackDocTS, uint16(0), byte(1))
	f.Add(slackDocSecret, []byte(slackDocBody), uint32(1531420618), "Ev1", slackDocSig, slackDocTS, uint16(7), byte(0x20))
	f.Add("k", []byte(`{"a":1}`), uint32(0), "build-41", "sha256=zz", "soon", uint16(100), byte(0xff))
	f.Add("k", []byte(`{"a":"\u0000"}`), uint32(1), "a.b", "sha1=00", "-1", uint16(3), byte('A'^'a'))
	f.Add("k", []byte(`{"a":1}`), uint32(1), "g1,g2", "sha256=00", "1", uint16(5), byte(1))
	f.Add("", []byte{}, uint32(4102444800), "", "", "", uint16(0), byte(0))
	f.Fuzz(func(t *testing.T, secret string, body []byte, ts uint32, id, rawSig, rawTS string, at uint16, flip byte) {
		// A distinctive secret, so that finding it in an answer means it leaked.
		secret = "whsec-" + secret
		now := time.Unix(int64(ts), 0)
		for _, s := range fuzzSources(secret) {
			h, sigHeader, covered := signed(s, body, int64(ts), id)
			// A '.' would make the signed string ambiguous, and a ',' reads
			// as a folded header: the signed id is refused as invalid first.
			if s.TimestampHeader != "" && strings.ContainsAny(id, ".,") {
				if p := s.verify(h, body, now); p == nil || p.Status != http.StatusBadRequest {
					t.Fatalf("%s: a signed delivery id with a '.' or a ',' (%q) was not refused as invalid", s.Type, id)
				}
				continue
			}
			if p := s.verify(h, body, now); p != nil {
				t.Fatalf("%s: a delivery signed with the secret was refused: %+v", s.Type, p.Problem)
			}
			checkParse(t, s, h, body)
			if flip == 0 {
				flip = 1
			}
			if len(body) > 0 { // one byte of the body changed
				other := append([]byte(nil), body...)
				other[int(at)%len(other)] ^= flip
				wantRefused(t, s, h, other, now, "the body changed")
			}
			sig := h.Get(sigHeader)
			i := int(at) % len(sig)
			changed := sig[:i] + string(sig[i]^flip) + sig[i+1:]
			// Hex digits are read in either case: a–f to A–F is the same
			// signature. Every signature ends in its 64 hex digits.
			if caseFlip := flip == 0x20 && isHexLetter(sig[i]) && i >= len(sig)-64; !caseFlip {
				o := h.Clone()
				o.Set(sigHeader, changed)
				wantRefused(t, s, o, body, now, "the signature changed")
			}
			for _, name := range covered {
				v := h.Get(name)
				if v == "" {
					continue
				}
				j := int(at) % len(v)
				o := h.Clone()
				o.Set(name, v[:j]+string(v[j]^flip)+v[j+1:])
				wantRefused(t, s, o, body, now, name+" changed")
			}
			// Raw header values, as any sender may send them.
			o := h.Clone()
			o.Set(sigHeader, rawSig)
			for _, name := range covered {
				o.Set(name, rawTS)
			}
			if p := s.verify(o, body, now); p != nil {
				checkRejection(t, s, p)
			}
		}
	})
}

func isHexLetter(c byte) bool { return c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

// wantRefused checks that s refuses the delivery, with a clean answer.
func wantRefused(t *testing.T, s *Source, h http.Header, body []byte, now time.Time, what string) {
	t.Helper()
	p := s.verify(h, body, now)
	if p == nil {
		t.Fatalf("%s source %s: %s and the delivery still verified (headers %q, body %q)", s.Type, s.Name, what, h, body)
	}
	checkRejection(t, s, p)
}

// checkRejection checks a refusal: a 401, and no trace of the secret in
// its answer.
func checkRejection(t *testing.T, s *Source, p *rejection) {
	t.Helper()
	dottedID := p.Status == http.StatusBadRequest && p.Code == string(agentledger.CodeInvalidDeliveryID)
	if p.Status != http.StatusUnauthorized && !dottedID || p.Detail == "" {
		t.Fatalf("%s source: refused with %+v, want a 401 (or a 400 for a dotted id) with a detail", s.Type, p.Problem)
	}
	rec := httptest.NewRecorder()
	p.write(rec)
	if strings.Contains(rec.Body.String(), s.Secret) || strings.Contains(p.err.Error(), s.Secret) {
		t.Fatalf("%s source: the answer holds the secret: %s", s.Type, rec.Body)
	}
}

// checkParse reads an authentic delivery: it never panics, and a refusal
// is a 4xx.
func checkParse(t *testing.T, s *Source, h http.Header, body []byte) {
	t.Helper()
	d, p := s.parse(h, body)
	if p != nil {
		if p.Status < 400 || p.Status > 499 || strings.Contains(p.Detail, s.Secret) {
			t.Fatalf("%s source: parse refused with %+v", s.Type, p.Problem)
		}
		return
	}
	if d.challenge == nil {
		if _, err := s.payload(d); err != nil {
			t.Fatalf("%s source: parsed delivery %q has no payload: %v", s.Type, body, err)
		}
	}
}
