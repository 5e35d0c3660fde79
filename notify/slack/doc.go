// Package slack is the Slack sink of package notify (slack-go, imported
// here as slackgo). It carries each effect key in the message metadata,
// answers "<channel id>/<ts>" as the ref, renders a message as Block Kit
// (header, fields, sections, footer), updates with chat.update, finds a
// message by reading the channel history with metadata, paces posts and
// updates per channel and per workspace, waits out 429s and never shows
// its token.
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
