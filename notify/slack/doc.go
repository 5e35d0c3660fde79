// Package slack is the Slack sink of package notify (slack-go, imported
// here as slackgo). It carries each effect key in the message metadata,
// answers "<channel id>/<ts>" as the ref, renders a message as Block Kit
// (header, fields, sections, footer), updates with chat.update, finds a
// message by reading the channel history with metadata, paces posts and
// updates per channel and per workspace, waits out 429s and never shows
// its token.
package slack
