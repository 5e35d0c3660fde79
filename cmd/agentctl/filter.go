package main

import (
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/claims"
)

// timeRange is the --since and --until of a command as given: RFC 3339
// times, dates, or durations meaning "that long ago".
type timeRange struct{ since, until string }

// timeRangeFlags adds --since and --until to cmd, bound to r; prefix
// starts their help.
func timeRangeFlags(cmd *cobra.Command, r *timeRange, prefix string) {
	cmd.Flags().StringVar(&r.since, "since", "",
		prefix+"only tasks created at or after this RFC 3339 time, date (2026-01-02) or duration ago (30m, 2h, 7d)")
	cmd.Flags().StringVar(&r.until, "until", "",
		prefix+"only tasks created before this RFC 3339 time, date or duration ago")
}

// apply parses the range into p. Every error matches agentledger.ErrInvalid
// and names the flag at fault.
func (r timeRange) apply(p *claims.ListParams, now time.Time) error {
	var err error
	if p.Since, err = parseWhen("--since", r.since, now); err != nil {
		return err
	}
	if p.Until, err = parseWhen("--until", r.until, now); err != nil {
		return err
	}
	if !p.Since.IsZero() && !p.Until.IsZero() && !p.Until.After(p.Since) {
		return agentledger.Invalid("--until", "%s is not after --since %s: the range is empty", stamp(p.Until), stamp(p.Since))
	}
	return nil
}

// parseWhen parses a time flag: an RFC 3339 time, a date (midnight, local
// time), or a duration meaning that long before now ("2h", "90m", "7d").
// Empty is the zero time (no bound).
func parseWhen(flag, s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	if t, err := time.ParseInLocation(time.DateOnly, s, time.Local); err == nil {
		return t, nil
	}
	if d, ok := parseAgo(s); ok {
		return now.Add(-d), nil
	}
	return time.Time{}, agentledger.Invalid(flag,
		"%q is neither an RFC 3339 time (2026-01-02T15:04:05Z), a date (2026-01-02) nor a duration ago (30m, 2h, 7d)", s)
}

// parseAgo parses a non-negative Go duration, or a whole number of days
// ("7d"). A sign is refused: "+2h" reads as the future (as --run-at has
// it), "-2h" as a double negative.
func parseAgo(s string) (time.Duration, bool) {
	if strings.HasPrefix(s, "+") || strings.HasPrefix(s, "-") {
		return 0, false
	}
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil || n < 0 || n > 100*365 {
			return 0, false
		}
		return time.Duration(n) * 24 * time.Hour, true
	}
	d, err := time.ParseDuration(s)
	return d, err == nil
}

// parseStates parses --state values, offering only the states in valid.
func parseStates(flag string, values []string, valid []agentledger.TaskState) ([]agentledger.TaskState, error) {
	var out []agentledger.TaskState
	for _, v := range values {
		st := agentledger.TaskState(strings.TrimSpace(v))
		ok := false
		for _, s := range valid {
			ok = ok || s == st
		}
		if !ok {
			if st.Valid() {
				// A real state this command does not take (a finished
				// task cannot be cancelled).
				return nil, usagef("%s tasks are not taken here: the states taken are %s", st, joinStates(valid, ", "))
			}
			return nil, usagef("unknown state %q: valid states are %s", v, joinStates(valid, ", "))
		}
		out = append(out, st)
	}
	return out, nil
}

// joinStates joins state names with sep.
func joinStates(states []agentledger.TaskState, sep string) string {
	names := make([]string, len(states))
	for i, s := range states {
		names[i] = string(s)
	}
	return strings.Join(names, sep)
}

// completeStates completes a --state flag with the states in valid.
func completeStates(valid []agentledger.TaskState) cobra.CompletionFunc {
	return func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return strings.Split(joinStates(valid, ","), ","), cobra.ShellCompDirectiveNoFileComp
	}
}

// describeFilter says which tasks p selects, for people; the states are
// left to the caller's wording.
func describeFilter(p claims.ListParams) string {
	var parts []string
	for _, f := range []struct{ name, v string }{{"tenant", p.Tenant}, {"queue", p.Queue}, {"kind", p.Kind}} {
		if f.v != "" {
			parts = append(parts, f.name+" "+f.v)
		}
	}
	if !p.Since.IsZero() {
		parts = append(parts, "created since "+stamp(p.Since))
	}
	if !p.Until.IsZero() {
		parts = append(parts, "created before "+stamp(p.Until))
	}
	if len(parts) == 0 {
		return "every tenant, queue and kind"
	}
	return strings.Join(parts, ", ")
}
