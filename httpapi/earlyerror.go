package httpapi

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/problem"
)

// net/http refuses a request it cannot parse before any handler runs — a
// header value with a control character (an Idempotency-Key holding one,
// say), a header name that is not a token, a missing or malformed Host, a
// request line it cannot read — and writes its own plain-text 400 straight
// to the connection; http.Server has no hook for it. Serve wraps every
// connection so that this one answer is rewritten into the problem+json
// every other refusal is (400 malformed_request). The answer is recognised
// by its exact form, which no handler's answer has (theirs carry a Date
// header and a Content-Length, and are written through a buffer): should a
// later Go write it otherwise, the plain-text answer comes through as it
// did before, and TestEarlyBadRequestIsAProblem says so.

// earlyHeaders are the header lines of net/http's own error answers.
const earlyHeaders = "\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"

// earlyStatuses are the answers net/http writes itself: a request it
// cannot parse, and one whose headers pass http.Server.MaxHeaderBytes.
var earlyStatuses = []string{"400 Bad Request", "431 Request Header Fields Too Large"}

// earlyListener wraps the connections it accepts in earlyConn.
type earlyListener struct{ net.Listener }

func (l earlyListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &earlyConn{Conn: c}, nil
}

// earlyConn rewrites net/http's own 400 answer as a problem.
type earlyConn struct{ net.Conn }

func (c *earlyConn) Write(b []byte) (int, error) {
	status, reason, ok := earlyBadRequest(b)
	if !ok {
		return c.Conn.Write(b)
	}
	if _, err := c.Conn.Write(earlyProblem(status, reason)); err != nil {
		return 0, err
	}
	return len(b), nil
}

// CloseWrite half-closes the connection as net/http does a TCP one's
// after some answers.
func (c *earlyConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// earlyBadRequest reports whether b is the whole of one of net/http's
// own answers, "HTTP/1.1 <status>[: reason]" + earlyHeaders + "<status>[:
// reason]" for a status of earlyStatuses, and returns the status and its
// reason ("" when it gives none).
func earlyBadRequest(b []byte) (string, string, bool) {
	for _, status := range earlyStatuses {
		rest, ok := bytes.CutPrefix(b, []byte("HTTP/1.1 "+status))
		if !ok {
			continue
		}
		reason, body, ok := bytes.Cut(rest, []byte(earlyHeaders))
		if !ok || string(body) != status+string(reason) {
			return "", "", false
		}
		if len(reason) == 0 {
			return status, "", true
		}
		r, ok := strings.CutPrefix(string(reason), ": ")
		return status, r, ok
	}
	return "", "", false
}

// earlyReasons say net/http's reasons for people.
var earlyReasons = map[string]string{
	"invalid header value":         "a header value holds a control character (only printable characters and tabs are allowed)",
	"invalid header name":          "a header name is not an HTTP token",
	"missing required Host header": "the Host header is missing",
	"malformed Host header":        "the Host header is malformed",
}

// earlyProblem is the whole answer, status line to body, for a request
// net/http refused with status for reason.
func earlyProblem(status, reason string) []byte {
	detail, ok := earlyReasons[reason]
	switch {
	case ok:
	case reason == "":
		detail = "the request line or a header is not valid HTTP/1.1 (a header value with a control character, for instance)"
	default:
		detail = reason
	}
	err := fmt.Errorf("%w: %s", errMalformed, detail)
	if strings.HasPrefix(status, "431") {
		err = agentledger.NewError(agentledger.CodeHeadersTooLarge, "the request's headers are too large")
	}
	p := problem.Of(err)
	body := problem.Body(p)
	var b bytes.Buffer
	b.WriteString("HTTP/1.1 " + strconv.Itoa(p.Status) + " " + http.StatusText(p.Status) + "\r\n")
	for k, vs := range problem.Header(err, p) {
		for _, v := range vs {
			b.WriteString(k + ": " + v + "\r\n")
		}
	}
	b.WriteString("Content-Length: " + strconv.Itoa(len(body)) + "\r\nConnection: close\r\n\r\n")
	b.Write(body)
	return b.Bytes()
}
