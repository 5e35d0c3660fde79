package slackfake

import (
	"encoding/json"
	"net/url"
	"unicode/utf8"
)

// Slack's limits on a message, as the fake enforces them.
const (
	maxText         = 40000 // characters of text
	maxBlocks       = 50
	maxSectionText  = 3000
	maxSectionField = 2000
	maxFields       = 10
	maxHeaderText   = 150
)

// postMessage is chat.postMessage: channel by ID or name.
func (s *Server) postMessage(form url.Values) (any, string) {
	c := s.lookup(form.Get("channel"), true)
	switch {
	case c == nil:
		return nil, "channel_not_found"
	case c.archived:
		return nil, "is_archived"
	case !c.member:
		return nil, "not_in_channel"
	}
	m := &Message{Channel: c.id, Text: form.Get("text")}
	if code := m.set(form); code != "" {
		return nil, code
	}
	if m.Text == "" && m.Blocks == nil {
		return nil, "no_text"
	}
	m.TS = s.nextTS()
	c.add(m)
	return map[string]any{"ok": true, "channel": c.id, "ts": m.TS, "message": wire(m, true)}, ""
}

// update is chat.update: channel by ID only, as Slack wants it. Metadata
// left out of the call is kept.
func (s *Server) update(form url.Values) (any, string) {
	c := s.lookup(form.Get("channel"), false)
	if c == nil {
		return nil, "channel_not_found"
	}
	m := c.byTS[form.Get("ts")]
	if m == nil {
		return nil, "message_not_found"
	}
	next := *m
	if form.Has("text") {
		next.Text = form.Get("text")
	}
	if code := next.set(form); code != "" {
		return nil, code
	}
	next.Updates++
	*m = next
	return map[string]any{"ok": true, "channel": c.id, "ts": m.TS, "text": m.Text, "message": wire(m, true)}, ""
}

// set applies the form's blocks and metadata to m and checks the text,
// answering a Slack error code for what Slack would reject.
func (m *Message) set(form url.Values) string {
	if utf8.RuneCountInString(m.Text) > maxText {
		return "msg_too_long"
	}
	if form.Has("blocks") {
		raw := json.RawMessage(form.Get("blocks"))
		if !validBlocks(raw) {
			return "invalid_blocks"
		}
		m.Blocks = raw
	}
	if form.Has("metadata") {
		var md Metadata
		if json.Unmarshal([]byte(form.Get("metadata")), &md) != nil {
			return "invalid_metadata_format"
		}
		m.Metadata = &md
		if md.EventType == "" {
			m.Metadata = nil // "{}" removes metadata
		}
	}
	return ""
}

// block is the part of a Block Kit block the fake checks.
type block struct {
	Type   string `json:"type"`
	Text   *text  `json:"text"`
	Fields []text `json:"fields"`
	// Elements are a context's texts or an actions block's buttons.
	Elements []json.RawMessage `json:"elements"`
}

type text struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// validBlocks checks the limits Slack answers invalid_blocks for.
func validBlocks(raw json.RawMessage) bool {
	var blocks []block
	if json.Unmarshal(raw, &blocks) != nil || len(blocks) > maxBlocks {
		return false
	}
	n := utf8.RuneCountInString
	for _, b := range blocks {
		switch b.Type {
		case "section":
			if b.Text == nil && len(b.Fields) == 0 || b.Text != nil && (b.Text.Text == "" || n(b.Text.Text) > maxSectionText) || len(b.Fields) > maxFields {
				return false
			}
			for _, f := range b.Fields {
				if f.Text == "" || n(f.Text) > maxSectionField {
					return false
				}
			}
		case "header":
			if b.Text == nil || b.Text.Type != "plain_text" || b.Text.Text == "" || n(b.Text.Text) > maxHeaderText {
				return false
			}
		case "context":
			if len(b.Elements) == 0 || len(b.Elements) > 10 {
				return false
			}
		case "actions":
			if len(b.Elements) == 0 || len(b.Elements) > 25 {
				return false
			}
		case "":
			return false
		}
	}
	return true
}

// wire is m as Slack answers it; metadata only when withMetadata.
func wire(m *Message, withMetadata bool) map[string]any {
	w := map[string]any{"type": "message", "ts": m.TS, "text": m.Text, "bot_id": "B0FAKE", "user": "U0FAKE"}
	if m.Blocks != nil {
		w["blocks"] = m.Blocks
	}
	if m.Metadata != nil && withMetadata {
		w["metadata"] = m.Metadata
	}
	return w
}
