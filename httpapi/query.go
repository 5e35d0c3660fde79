package httpapi

import (
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/agentledger/agentledger"
)

// badParameter is the problem of a query parameter: it matches
// errBadParameter (400) and names field.
func badParameter(field, format string, args ...any) error {
	return fmt.Errorf("%w: %w", errBadParameter, agentledger.Invalid(field, format, args...))
}

// checkQuery refuses a parameter the route does not take (allowed) and one
// given more than once, but for "state", which lists.
func checkQuery(q url.Values, allowed []string) error {
	for k, vs := range q {
		if !slices.Contains(allowed, k) {
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
