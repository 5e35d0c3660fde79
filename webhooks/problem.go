package webhooks

import (
	"encoding/json"
	"fmt"
	"net/http"
)

// Problem codes: the "code" member of the handler's problem+json answers,
// stable across releases.
const (
	// CodeUnknownSource (404): no source has the path's name.
	CodeUnknownSource = "unknown_source"
	// CodeMethodNotAllowed (405): the request is not a POST.
	CodeMethodNotAllowed = "method_not_allowed"
	// CodeBodyTooLarge (413): the body exceeds Config.MaxBody.
	CodeBodyTooLarge = "body_too_large"
	// CodeUnreadableBody (400): the body could not be read.
	CodeUnreadableBody = "unreadable_body"
	// CodeBadSignature (401): the signature is missing, malformed or wrong.
	CodeBadSignature = "bad_signature"
	// CodeStaleTimestamp (401): a Slack request's timestamp is more than
	// SlackMaxSkew from the server's clock.
	CodeStaleTimestamp = "stale_timestamp"
	// CodeInvalidBody (400): the body is not JSON (or not JSON PostgreSQL
	// can store).
	CodeInvalidBody = "invalid_body"
	// CodeMissingDeliveryID (400): the delivery carries no delivery id.
	CodeMissingDeliveryID = "missing_delivery_id"
	// CodeInvalidDeliveryID (400): the delivery id is not 1–128 printable
	// ASCII characters without spaces.
	CodeInvalidDeliveryID = "invalid_delivery_id"
	// CodeDeliveryConflict (422): the delivery id names an earlier task
	// made from a different delivery.
	CodeDeliveryConflict = "delivery_conflict"
	// CodeUnavailable (503): the delivery could not be stored; the sender
	// should retry.
	CodeUnavailable = "unavailable"
)

// ProblemType is the prefix of every problem's "type": the code follows
// it, as in the HTTP API's answers.
const ProblemType = "urn:agentledger:problem:"

// problem is an RFC 9457 problem details object with a stable code. A
// detail never holds a secret or a signature.
type problem struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail,omitempty"`
	Code   string `json:"code"`
}

// problems maps each code to its status and title: the one table of the
// handler's error answers.
var problems = map[string]struct {
	status int
	title  string
}{
	CodeUnknownSource:     {http.StatusNotFound, "Unknown webhook source"},
	CodeMethodNotAllowed:  {http.StatusMethodNotAllowed, "Method not allowed"},
	CodeBodyTooLarge:      {http.StatusRequestEntityTooLarge, "Request body too large"},
	CodeUnreadableBody:    {http.StatusBadRequest, "Unreadable request body"},
	CodeBadSignature:      {http.StatusUnauthorized, "Bad signature"},
	CodeStaleTimestamp:    {http.StatusUnauthorized, "Stale timestamp"},
	CodeInvalidBody:       {http.StatusBadRequest, "Invalid body"},
	CodeMissingDeliveryID: {http.StatusBadRequest, "Missing delivery id"},
	CodeInvalidDeliveryID: {http.StatusBadRequest, "Invalid delivery id"},
	CodeDeliveryConflict:  {http.StatusUnprocessableEntity, "Delivery id reused"},
	CodeUnavailable:       {http.StatusServiceUnavailable, "Delivery not stored"},
}

// newProblem is the problem code with a detail.
func newProblem(code, format string, args ...any) *problem {
	e, ok := problems[code]
	if !ok {
		panic("webhooks: no problem " + code)
	}
	return &problem{
		Type:   ProblemType + code,
		Title:  e.title,
		Status: e.status,
		Detail: fmt.Sprintf(format, args...),
		Code:   code,
	}
}

func (p *problem) write(w http.ResponseWriter) {
	if p.Status == http.StatusMethodNotAllowed {
		w.Header().Set("Allow", http.MethodPost)
	}
	writeJSON(w, p.Status, "application/problem+json", p)
}

func writeJSON(w http.ResponseWriter, status int, contentType string, v any) {
	b, err := json.Marshal(v)
	if err != nil { // only plain structs and maps of strings are written
		panic(err)
	}
	h := w.Header()
	h.Set("Content-Type", contentType)
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}
