// Package flow keeps fleet-wide rate limits per target in PostgreSQL, so
// that any number of daemons obey one limit together: three daemons posting
// to one Slack channel share its one message a second.
//
// A target is what a call reaches: "http:https://billing.internal:8080"
// (an origin, normalised as grants.Origin does), "mcp:shop" (an MCP
// server), "model:api.openai.com" (a model endpoint's host),
// "slack-channel:C0123ABCD" (a channel ID or name) and "slack-workspace".
// "<kind>:*" is the kind's default: every target of that kind without a
// limit of its own gets the same limit, each with its own budget.
//
// A limit is a rate (N per second or per minute) and a burst. Limiter.Take
// enforces it with GCRA (the generic cell rate algorithm): each concrete
// target has one row in flow_state holding its theoretical arrival time
// (tat); a call is allowed when tat - (burst-1)·emission <= now, and then
// moves tat to max(tat, now) + emission, where emission = 1/rate. One
// statement does it under the row's lock, on the database's clock
// (clock_timestamp()), so daemons with skewed clocks agree and the calls
// booked on one target are spaced at least one emission apart (after the
// burst).
//
// The common path is that one statement per call: the limits themselves
// are cached in each Limiter for a few seconds (CacheFor), so a changed
// limit holds everywhere within that time. Taking capacity in batches (a
// daemon booking k calls at once and spending them locally) would save
// k-1 writes per k calls but lets one daemon hold capacity another is
// waiting for and spend it up to k emissions late, so the fleet's calls are
// no longer spaced evenly; the rates here are small (Slack: one a second),
// so it is not done.
//
// A limit that cannot be read, or a booking the database does not answer,
// is an error from Take: callers wait and try again (Limiter.Wait does), so
// a target never runs unlimited because the database is away.
package flow
