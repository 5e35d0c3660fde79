package slack

import (
	"context"
	"net/http"
	"time"
)

// deadlineTransport refuses to send a request whose context's deadline
// has passed, reading the clock at the moment of sending. The context
// itself is cancelled by a timer, and a process stopped past its
// delivery's deadline (a dispatcher frozen mid-delivery, its lease taken
// over) runs on when it resumes: the goroutine about to send can win the
// race with that timer and post after another dispatcher looked the post
// up and posted it, a second message. This check does not wait for the
// timer. A stop inside the send itself is not covered.
type deadlineTransport struct{ base http.RoundTripper }

func (t deadlineTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if d, ok := req.Context().Deadline(); ok && !time.Now().Before(d) {
		if req.Body != nil {
			req.Body.Close() //nolint:errcheck // a RoundTripper closes the body it does not send
		}
		return nil, context.DeadlineExceeded
	}
	return t.base.RoundTrip(req)
}

// withDeadline returns a copy of hc whose requests are not sent past
// their context's deadline.
func withDeadline(hc *http.Client) *http.Client {
	return wrapTransport(hc, func(base http.RoundTripper) http.RoundTripper {
		return deadlineTransport{base: base}
	})
}
