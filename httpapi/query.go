package httpapi

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/agentledger/agentledger"
)

// badParameter is the problem of a query parameter: it matches
// errBadParameter (400) and names field.
func badParameter(field, format string, args ...any) error {
	return fmt.Errorf("%w: %w", errBadParameter, agentledger.Invalid(field, format, args...))
}

// parseQuery parses a route's raw query string, refusing one that does not
// parse and any name or value that is not text PostgreSQL can hold (invalid
// UTF-8, a NUL byte): each is a 400 naming the parameter, never a query
// the database refuses (a 500).
func parseQuery(raw string) (url.Values, error) {
	q, err := url.ParseQuery(raw)
	if err != nil {
		return nil, badParameter("", "the query string is malformed")
	}
	for k, vs := range q {
		if !utf8.ValidString(k) || strings.ContainsRune(k, 0) {
			return nil, badParameter("", "a parameter's name is not valid UTF-8 text")
		}
		for _, v := range vs {
			if !utf8.ValidString(v) || strings.ContainsRune(v, 0) {
				return nil, badParameter(k, "is not valid UTF-8 text (or holds a NUL byte)")
			}
		}
	}
	return q, nil
}

// checkQuery refuses a parameter the route does not take (allowed) and one
// given more than once, but for "state", which lists.
func checkQuery(q url.Values, allowed []string) error {
	for k, vs := range q {
		if !slices.Contains(allowed, k) {
			if len(allowed) == 0 {
				return badParameter(k, "is not a parameter of this route, which takes none")
			}
			return badParameter(k, "is not a parameter of this route (%s)", strings.Join(allowed, ", "))
		}
		if k != "state" && len(vs) > 1 {
			return badParameter(k, "is given %d times", len(vs))
		}
	}
	return nil
}

// states are the values of "state", comma-separated or repeated, each
// checked by valid against the list it is one of.
func states(q url.Values, valid func(string) bool, list any) ([]string, error) {
	var out []string
	for _, v := range q["state"] {
		for st := range strings.SplitSeq(v, ",") {
			st = strings.TrimSpace(st)
			if !valid(st) {
				return nil, badParameter("state", "%q is not one of %v", st, list)
			}
			out = append(out, st)
		}
	}
	return out, nil
}

// limit is the "limit" parameter, 1..maxListLimit, or def when absent.
func limit(q url.Values, def int) (int, error) {
	v := q.Get("limit")
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > maxListLimit {
		return 0, badParameter("limit", "must be an integer in 1..%d", maxListLimit)
	}
	return n, nil
}

// noQuery is a read of a route that takes no query parameters: any is
// refused (400) as on the routes that take some, not ignored.
func (s *Server) noQuery(fn readFunc) readFunc {
	return func(r *http.Request, tenant string) reply {
		q, err := parseQuery(r.URL.RawQuery)
		if err == nil {
			err = checkQuery(q, nil)
		}
		if err != nil {
			return s.problemReply(r, err)
		}
		return fn(r, tenant)
	}
}
