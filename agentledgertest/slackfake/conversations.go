package slackfake

import (
	"encoding/base64"
	"net/url"
	"strconv"
	"strings"
)

// history is conversations.history: channel by ID, newest first, paged.
func (s *Server) history(form url.Values) (any, string) {
	c := s.lookup(form.Get("channel"), false)
	if c == nil {
		return nil, "channel_not_found"
	}
	if !c.member {
		return nil, "not_in_channel"
	}
	limit, code := pageLimit(form.Get("limit"), 100, 999)
	if code != "" {
		return nil, code
	}
	inclusive := form.Get("inclusive") == "1" || form.Get("inclusive") == "true"
	oldest, okO := parseTS(form.Get("oldest"), 0)
	latest, okL := parseTS(form.Get("latest"), 1<<62)
	before, okC := decodeCursor(form.Get("cursor"), 1<<62)
	if !okO || !okL || !okC {
		return nil, "invalid_arguments"
	}
	metadata := form.Get("include_all_metadata") == "1" || form.Get("include_all_metadata") == "true"
	msgs := []map[string]any{}
	more := false
	for i := len(c.messages) - 1; i >= 0; i-- {
		m := c.messages[i]
		ts, _ := parseTS(m.TS, 0)
		if ts >= before || ts > latest || !inclusive && ts == latest {
			continue
		}
		if ts < oldest || !inclusive && ts == oldest {
			break
		}
		if len(msgs) == limit {
			more = true
			break
		}
		msgs = append(msgs, wire(m, metadata))
	}
	next := ""
	if more {
		next = encodeCursor(msgs[len(msgs)-1]["ts"].(string))
	}
	return map[string]any{"ok": true, "messages": msgs, "has_more": more,
		"response_metadata": map[string]any{"next_cursor": next}}, ""
}

// list is conversations.list: every channel, in creation order, paged.
func (s *Server) list(form url.Values) (any, string) {
	limit, code := pageLimit(form.Get("limit"), 100, 1000)
	if code != "" {
		return nil, code
	}
	start := 0
	if cur := form.Get("cursor"); cur != "" {
		b, err := base64.StdEncoding.DecodeString(cur)
		n, err2 := strconv.Atoi(strings.TrimPrefix(string(b), "index:"))
		if err != nil || err2 != nil || n < 0 {
			return nil, "invalid_cursor"
		}
		start = n
	}
	excludeArchived := form.Get("exclude_archived") == "true" || form.Get("exclude_archived") == "1"
	chans := []map[string]any{}
	next := ""
	for i := start; i < len(s.channels); i++ {
		c := s.channels[i]
		if excludeArchived && c.archived {
			continue
		}
		if len(chans) == limit {
			next = base64.StdEncoding.EncodeToString([]byte("index:" + strconv.Itoa(i)))
			break
		}
		chans = append(chans, map[string]any{"id": c.id, "name": c.name, "is_channel": true,
			"is_archived": c.archived, "is_member": c.member})
	}
	return map[string]any{"ok": true, "channels": chans, "response_metadata": map[string]any{"next_cursor": next}}, ""
}

// pageLimit parses a limit, def when empty, capped at most.
func pageLimit(s string, def, most int) (int, string) {
	if s == "" {
		return def, ""
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0, "invalid_limit"
	}
	if n == 0 {
		return def, ""
	}
	return min(n, most), ""
}

// parseTS turns "1700000000.000100" into microseconds; def when empty.
func parseTS(s string, def int64) (int64, bool) {
	if s == "" {
		return def, true
	}
	sec, frac, _ := strings.Cut(s, ".")
	n, err := strconv.ParseInt(sec, 10, 64)
	if err != nil || len(frac) > 6 {
		return 0, false
	}
	var us int64
	if frac != "" {
		if us, err = strconv.ParseInt(frac+strings.Repeat("0", 6-len(frac)), 10, 64); err != nil {
			return 0, false
		}
	}
	return n*1e6 + us, true
}

// A history cursor names the ts the next page starts below.
func encodeCursor(ts string) string {
	return base64.StdEncoding.EncodeToString([]byte("before:" + ts))
}

func decodeCursor(cur string, def int64) (int64, bool) {
	if cur == "" {
		return def, true
	}
	b, err := base64.StdEncoding.DecodeString(cur)
	ts, ok := strings.CutPrefix(string(b), "before:")
	if err != nil || !ok {
		return 0, false
	}
	return parseTS(ts, 0)
}
