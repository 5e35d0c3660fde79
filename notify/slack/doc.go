// Package slack is the Slack sink of package notify (slack-go, imported
// here as slackgo). It carries each effect key in the message metadata,
// answers "<channel id>/<ts>" as the ref, renders a message as Block Kit
// (header, fields, sections, footer), updates with chat.update, finds a
// message by reading the channel history with metadata, paces posts and
// updates per channel and per workspace, waits out 429s and never shows
// its token.
//
// Pacing is per process unless Config.Fleet is set: then every post and
// update is also booked on limits the fleet shares (package flow keeps
// them in PostgreSQL), on the targets "slack-channel:<channel ID>" (a
// name is resolved to its ID first) and "slack-workspace", and an
// unreadable limit makes the call wait, never go unpaced. The fleet spaces
// bookings, but Slack sees arrivals: a call goes right after its bookings,
// never before, and reaches Slack a little later — the workspace's answer
// and the HTTP request's way, milliseconds on a healthy host. Two calls to
// one channel therefore reach Slack the limit's spacing apart, less the
// difference of those delays. To keep Slack's one a second per channel
// at Slack's end, set the slack-channel limit a little under it, with a
// burst of 1: 50/min leaves 200 ms for the delays (the three-daemon test
// in internal/test/chaos, TestSlackFleetPacing, configures that and measures
// arrivals).
//
// Check (auth.test) tells whether Slack takes the token, so that agentd
// can refuse a wrong one at start. Find bounds its read of the history by
// Slack's own clock, not ours: every answer's Date header and every post's
// ts tell the sink how far Slack's clock is from its own, and the search
// starts where Slack's clock stood at the reservation (less 30s), 999
// messages a page.
//
// The Web API methods it calls, and the bot token scopes they need:
// chat.postMessage and chat.update (chat:write), conversations.history
// (channels:history; groups:history for private channels),
// conversations.list, only to resolve a channel name (channels:read;
// groups:read), and auth.test (none).
package slack
