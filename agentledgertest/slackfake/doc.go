// Package slackfake is a loopback Slack Web API for tests: slack-go's own
// slacktest server, with the methods slack.Sink (package notify/slack) calls replaced by
// handlers that behave as Slack does where slacktest does not.
//
// It answers chat.postMessage (storing channel, text, blocks and metadata
// under a unique, increasing ts), chat.update, conversations.history (newest
// first, paged by cursor and limit, bounded by oldest and latest, metadata
// only with include_all_metadata), conversations.list and auth.test. Every
// call must carry the configured token, as a bearer header or a token form
// field (else not_authed or invalid_auth, as Slack answers).
//
// Its clock can run off the real one (Skew): the ts of new messages and
// the Date header of every answer follow it, as Slack's own clock would.
// Backfill gives a channel the recent history of a busy one.
//
// Arrivals records when each post and update reached the fake, per
// channel, and MaxPerWindow counts the most in any window of a given
// length: what Slack's one-a-second-per-channel limit would see.
//
// Faults are scripted per method with Inject: an HTTP status with
// Retry-After (a 429), a Slack error code such as fatal_error, or a dropped
// connection, each optionally after the call took effect ("accepted but the
// answer was lost"). Unknown channels answer channel_not_found and updates
// of unknown messages message_not_found, as Slack does.
package slackfake
