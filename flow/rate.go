package flow

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/agentledger/agentledger"
)

// MaxN bounds the calls of a rate per unit.
const MaxN = 1_000_000

// Rate is N calls per second or per minute.
type Rate struct {
	N   int64
	Per time.Duration // time.Second or time.Minute
}

// ParseRate parses "N/s" or "N/min" ("N/second", "N/minute" too). Errors
// name the field "rate".
func ParseRate(s string) (Rate, error) {
	n, unit, ok := strings.Cut(strings.TrimSpace(s), "/")
	if !ok {
		return Rate{}, agentledger.Invalid("rate", "%q has no unit: write N/s or N/min", s)
	}
	var r Rate
	switch strings.TrimSpace(unit) {
	case "s", "sec", "second":
		r.Per = time.Second
	case "min", "minute":
		r.Per = time.Minute
	default:
		return Rate{}, agentledger.Invalid("rate", "%q: the unit must be s or min", s)
	}
	v, err := strconv.ParseInt(strings.TrimSpace(n), 10, 64)
	if err != nil {
		return Rate{}, agentledger.Invalid("rate", "%q: the count must be a whole number", s)
	}
	r.N = v
	return r, r.Validate()
}

// Validate checks that the rate allows at least one call and at most MaxN
// per unit; errors name the field "rate".
func (r Rate) Validate() error { return r.validate("rate") }

func (r Rate) validate(field string) error {
	switch {
	case r.Per != time.Second && r.Per != time.Minute:
		return agentledger.Invalid(field, "the unit must be a second or a minute")
	case r.N <= 0:
		return agentledger.Invalid(field, "%s must allow at least one call (a positive count)", r)
	case r.N > MaxN:
		return agentledger.Invalid(field, "%s is more than %d calls per unit", r, MaxN)
	}
	return nil
}

// IsZero reports whether r is no rate at all (not paced).
func (r Rate) IsZero() bool { return r.N == 0 && r.Per == 0 }

// Emission is the time between two calls at this rate, rounded up to the
// microsecond (the database's precision) so that the rate is never
// exceeded.
func (r Rate) Emission() time.Duration {
	e := (r.Per + time.Duration(r.N) - 1) / time.Duration(r.N)
	return (e + time.Microsecond - 1).Truncate(time.Microsecond)
}

// String spells the rate as ParseRate reads it: "1/s", "60/min"; the zero
// Rate is "".
func (r Rate) String() string {
	if r.IsZero() {
		return ""
	}
	if r.Per == time.Minute {
		return fmt.Sprintf("%d/min", r.N)
	}
	return fmt.Sprintf("%d/s", r.N)
}

// MarshalText spells the rate as String does.
func (r Rate) MarshalText() ([]byte, error) { return []byte(r.String()), nil }

// UnmarshalText reads the rate as ParseRate does.
func (r *Rate) UnmarshalText(b []byte) error {
	if len(b) == 0 {
		*r = Rate{}
		return nil
	}
	v, err := ParseRate(string(b))
	if err != nil {
		return err
	}
	*r = v
	return nil
}
