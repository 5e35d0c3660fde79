// Package flow keeps fleet-wide rate limits per target in PostgreSQL, so
// that any number of daemons obey one limit together: three daemons posting
// to one Slack channel share its one message a second.
//
// A target is what a call reaches: "http:https://billing.internal:8080"
// (an origin, normalised as grants.Origin does), "mcp:shop" (an MCP
// server), "model:api.openai.com" (a model endpoint's host),
// "slack-channel:C0123ABCD" (a channel ID: the Slack sink paces by ID) and "slack-workspace".
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
// The limits themselves are cached in each Limiter for a few seconds
// (CacheFor), so a changed limit holds everywhere within that time. A
// target whose rate allows two calls or more in 50 ms (40/s and up) is
// booked in batches, so that the common path is not a write per call: one
// statement books up to the calls of 50 ms at the rate (at most 100),
// moving tat by as many emissions, and the Limiter hands them to its
// callers itself, each no earlier than GCRA would have let it through
// booked alone (its theoretical arrival time less the burst's tolerance,
// on the database's clock as seen from when the booking's answer
// arrived). One booking per target is in flight in a Limiter at a time: a
// caller that takes a call of a batch running low (half its calls or half
// its time left) starts booking the next, and the callers wait for it
// only if the batch runs out first. A daemon's batches double while none
// of their calls is dropped and fall to the calls it spent when some are,
// so a daemon that calls rarely holds little.
//
// What batches cost in precision: a call is never early but may go
// through up to 50 ms after its time (later it is dropped), so in a window
// of any length the fleet's calls may exceed what GCRA allows calls booked
// one by one (rate × window + burst) by the calls of 50 ms at the rate; a
// daemon holds calls that another may be waiting for (the batch it spends
// and the next, at most 200 calls and 100 ms of the rate); and the calls a
// daemon booked but did not spend (dropped late, dropped by Changed, or
// held when it stops) are lost: capacity lost, never gained. Lower rates
// (Slack's one a second, 50 a minute per channel) book one call per
// statement, spaced exactly.
//
// A limit that cannot be read, or a booking the database does not answer,
// is an error from Take: callers wait and try again (Limiter.Wait does), so
// a target never runs unlimited because the database is away.
package flow
