package agentledger

import (
	"context"
	"errors"
	"fmt"
	"net/http"
)

// Code is the stable, machine-readable name of a kind of error: the "code"
// of the HTTP API's and the webhooks' problem+json answers (and the end of
// their "type"), and what decides agentctl's exit status. A code never
// changes meaning; new ones may be added.
type Code string

// Kind is what a Code means to each front end.
type Kind struct {
	Code   Code
	Status int    // the HTTP status of an answer of this kind
	Title  string // the problem+json title
	Exit   int    // agentctl's exit status
	// sentinel is the error of this kind that callers test with
	// errors.Is, if it has one.
	sentinel error
}

// The codes. Each has one row in kinds.
const (
	CodeInternal                 Code = "internal"
	CodeInvalid                  Code = "invalid_request"
	CodeNotFound                 Code = "not_found"
	CodeConflict                 Code = "conflict"
	CodeKeyReused                Code = "submission_key_reused"
	CodeLeaseLost                Code = "lease_lost"
	CodeCancelled                Code = "task_cancelled"
	CodeNeedsAttention           Code = "needs_attention"
	CodeTimeout                  Code = "timeout"
	CodeRequestCancelled         Code = "cancelled"
	CodeUnauthorized             Code = "unauthorized"
	CodeForbidden                Code = "forbidden"
	CodeIdempotencyKeyMissing    Code = "idempotency_key_missing"
	CodeIdempotencyKeyInvalid    Code = "idempotency_key_invalid"
	CodeIdempotencyKeyDuplicated Code = "idempotency_key_duplicated"
	CodeIdempotencyKeyReused     Code = "idempotency_key_reused"
	CodeIdempotencyKeyInFlight   Code = "idempotency_key_in_flight"
	CodeBodyTooLarge             Code = "body_too_large"
	CodeHeadersTooLarge          Code = "headers_too_large"
	CodeUnsupportedMediaType     Code = "unsupported_media_type"
	CodeMalformedRequest         Code = "malformed_request"
	CodeInvalidParameter         Code = "invalid_parameter"
	CodeRouteNotFound            Code = "route_not_found"
	CodeMethodNotAllowed         Code = "method_not_allowed"
	CodeUnknownSource            Code = "unknown_source"
	CodeUnreadableBody           Code = "unreadable_body"
	CodeBadSignature             Code = "bad_signature"
	CodeStaleTimestamp           Code = "stale_timestamp"
	CodeInvalidBody              Code = "invalid_body"
	CodeMissingDeliveryID        Code = "missing_delivery_id"
	CodeInvalidDeliveryID        Code = "invalid_delivery_id"
	CodeDeliveryConflict         Code = "delivery_conflict"
	CodeUnavailable              Code = "unavailable"
)

// Exit statuses of agentctl: usage and invalid input, every other failure.
const (
	exitUsage  = 2
	exitFailed = 1
)

// kinds is the error vocabulary, one row per code: adding an error adds a
// row here, and the API, the webhooks and agentctl answer it from this row.
var kinds = map[Code]Kind{
	CodeInternal:         {Status: http.StatusInternalServerError, Title: "Internal server error", Exit: exitFailed},
	CodeInvalid:          {Status: http.StatusUnprocessableEntity, Title: "Invalid request", Exit: exitUsage, sentinel: ErrInvalid},
	CodeNotFound:         {Status: http.StatusNotFound, Title: "Not found", Exit: exitFailed, sentinel: ErrNotFound},
	CodeConflict:         {Status: http.StatusConflict, Title: "Conflict", Exit: exitFailed, sentinel: ErrConflict},
	CodeKeyReused:        {Status: http.StatusUnprocessableEntity, Title: "Submission key reused", Exit: exitFailed, sentinel: ErrKeyReuse},
	CodeLeaseLost:        {Status: http.StatusConflict, Title: "Lease lost", Exit: exitFailed, sentinel: ErrLeaseLost},
	CodeCancelled:        {Status: http.StatusConflict, Title: "Task cancelled", Exit: exitFailed, sentinel: ErrCancelled},
	CodeNeedsAttention:   {Status: http.StatusConflict, Title: "Needs attention", Exit: exitFailed, sentinel: ErrNeedsAttention},
	CodeTimeout:          {Status: http.StatusServiceUnavailable, Title: "Timed out", Exit: exitFailed, sentinel: context.DeadlineExceeded},
	CodeRequestCancelled: {Status: http.StatusServiceUnavailable, Title: "Request cancelled", Exit: exitFailed, sentinel: context.Canceled},
	CodeUnauthorized:     {Status: http.StatusUnauthorized, Title: "Unauthorized", Exit: exitFailed},
	CodeForbidden:        {Status: http.StatusForbidden, Title: "Not granted", Exit: exitFailed, sentinel: ErrForbidden},

	CodeIdempotencyKeyMissing:    {Status: http.StatusBadRequest, Title: "Idempotency-Key missing", Exit: exitUsage},
	CodeIdempotencyKeyInvalid:    {Status: http.StatusBadRequest, Title: "Idempotency-Key invalid", Exit: exitUsage},
	CodeIdempotencyKeyDuplicated: {Status: http.StatusBadRequest, Title: "Idempotency-Key given more than once", Exit: exitUsage},
	CodeIdempotencyKeyReused:     {Status: http.StatusUnprocessableEntity, Title: "Idempotency-Key reused", Exit: exitFailed},
	CodeIdempotencyKeyInFlight:   {Status: http.StatusConflict, Title: "Request in flight", Exit: exitFailed},
	CodeBodyTooLarge:             {Status: http.StatusRequestEntityTooLarge, Title: "Request body too large", Exit: exitUsage},
	CodeHeadersTooLarge:          {Status: http.StatusRequestHeaderFieldsTooLarge, Title: "Request headers too large", Exit: exitUsage},
	CodeUnsupportedMediaType:     {Status: http.StatusUnsupportedMediaType, Title: "Unsupported media type", Exit: exitUsage},
	CodeMalformedRequest:         {Status: http.StatusBadRequest, Title: "Malformed request", Exit: exitUsage},
	CodeInvalidParameter:         {Status: http.StatusBadRequest, Title: "Invalid query parameter", Exit: exitUsage},
	CodeRouteNotFound:            {Status: http.StatusNotFound, Title: "Not found", Exit: exitFailed},
	CodeMethodNotAllowed:         {Status: http.StatusMethodNotAllowed, Title: "Method not allowed", Exit: exitFailed},

	CodeUnknownSource:     {Status: http.StatusNotFound, Title: "Unknown webhook source", Exit: exitFailed},
	CodeUnreadableBody:    {Status: http.StatusBadRequest, Title: "Unreadable request body", Exit: exitFailed},
	CodeBadSignature:      {Status: http.StatusUnauthorized, Title: "Bad signature", Exit: exitFailed},
	CodeStaleTimestamp:    {Status: http.StatusUnauthorized, Title: "Stale timestamp", Exit: exitFailed},
	CodeInvalidBody:       {Status: http.StatusBadRequest, Title: "Invalid body", Exit: exitUsage},
	CodeMissingDeliveryID: {Status: http.StatusBadRequest, Title: "Missing delivery id", Exit: exitUsage},
	CodeInvalidDeliveryID: {Status: http.StatusBadRequest, Title: "Invalid delivery id", Exit: exitUsage},
	CodeDeliveryConflict:  {Status: http.StatusConflict, Title: "Delivery id reused", Exit: exitFailed},
	CodeUnavailable:       {Status: http.StatusServiceUnavailable, Title: "Not stored", Exit: exitFailed},
}

// sentinels are the codes that have a sentinel, in the order KindOf tests
// them: the more specific first (an invalid input wraps nothing else).
var sentinels = []Code{CodeKeyReused, CodeInvalid, CodeNotFound, CodeConflict, CodeLeaseLost,
	CodeCancelled, CodeNeedsAttention, CodeForbidden, CodeTimeout, CodeRequestCancelled}

// KindOf returns the kind of err: the code of the first *CodedError in its
// chain, else of the first sentinel it wraps, else CodeInternal.
func KindOf(err error) Kind {
	var ce *CodedError
	if errors.As(err, &ce) {
		return kindOf(ce.Code)
	}
	for _, c := range sentinels {
		if errors.Is(err, kinds[c].sentinel) {
			return kindOf(c)
		}
	}
	return kindOf(CodeInternal)
}

// Kinds returns the vocabulary, for documentation and tests.
func Kinds() []Kind {
	out := make([]Kind, 0, len(kinds))
	for c := range kinds {
		out = append(out, kindOf(c))
	}
	return out
}

func kindOf(c Code) Kind {
	k, ok := kinds[c]
	if !ok {
		panic("agentledger: no kind of error has code " + string(c))
	}
	k.Code = c
	return k
}

// CodedError is an error of a kind, with a message for people. It matches
// its kind's sentinel (ErrNotFound for CodeNotFound, …) with errors.Is.
type CodedError struct {
	Code Code
	Msg  string
}

// NewError returns an error of code whose message is msg: a package's own
// sentinel (tested with errors.Is by identity) or a one-off error.
func NewError(code Code, msg string) *CodedError {
	kindOf(code) // an unknown code is a programming error
	return &CodedError{Code: code, Msg: msg}
}

// Errorf returns an error of code with a formatted message that reads as a
// sentence: "task 7 is already succeeded", not "…: conflict".
func Errorf(code Code, format string, args ...any) error {
	return NewError(code, fmt.Sprintf(format, args...))
}

func (e *CodedError) Error() string { return e.Msg }

// Is makes errors.Is(err, ErrNotFound) true for an error of CodeNotFound,
// and so on for every code that has a sentinel.
func (e *CodedError) Is(target error) bool {
	s := kinds[e.Code].sentinel
	return s != nil && target == s
}

// Known reports whether c is a code of this vocabulary (a client meets
// codes of newer servers).
func Known(c Code) bool {
	_, ok := kinds[c]
	return ok
}
