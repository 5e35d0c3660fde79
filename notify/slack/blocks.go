package slack

import (
	"strings"
	"unicode/utf8"

	slackgo "github.com/slack-go/slack"
	"github.com/slack-go/slack/slackutilsx"

	"github.com/agentledger/agentledger/notify"
)

// Block Kit's limits (characters as sent, that is after escaping).
const (
	maxBlocks        = 50
	maxHeaderChars   = 150
	maxSectionChars  = 3000
	maxFieldChars    = 2000
	maxFieldsPerSect = 10
	maxContextChars  = 2000
	maxFallbackChars = 3000 // of the notification text, which blocks replace on screen
)

// slackOptions are m's text and blocks as slack-go options, then extra
// blocks (an approval's buttons); an update sends blocks even when there
// are none, to clear the old ones. Text is escaped (&, <, >), so it cannot
// mention @channel or forge links.
func slackOptions(m notify.Message, update bool, extra ...slackgo.Block) []slackgo.MsgOption {
	fallback := m.Text
	if m.Title != "" {
		fallback = m.Title + "\n" + m.Text
	}
	opts := []slackgo.MsgOption{slackgo.MsgOptionText(cut(fallback, maxFallbackChars), true)}
	bs := slackBlocks(m)
	if len(extra) > 0 {
		bs = append(bs[:min(len(bs), maxBlocks-len(extra))], extra...)
	}
	if len(bs) > 0 || update {
		opts = append(opts, slackgo.MsgOptionBlocks(bs...))
	}
	return opts
}

// slackBlocks renders m: header, fields, text sections, footer, within
// Block Kit's limits.
func slackBlocks(m notify.Message) []slackgo.Block {
	var bs []slackgo.Block
	if t := strings.TrimSpace(m.Title); t != "" {
		bs = append(bs, slackgo.NewHeaderBlock(slackgo.NewTextBlockObject(slackgo.PlainTextType, cut(t, maxHeaderChars), true, false)))
	}
	var fields []*slackgo.TextBlockObject
	for _, f := range m.Fields {
		if f.Label == "" && f.Value == "" {
			continue
		}
		s := "*" + fit(f.Label, 100) + "*\n" + fit(f.Value, maxFieldChars-110)
		fields = append(fields, slackgo.NewTextBlockObject(slackgo.MarkdownType, s, false, false))
		if len(fields) == maxFieldsPerSect {
			bs, fields = append(bs, slackgo.NewSectionBlock(nil, fields, nil)), nil
		}
	}
	if len(fields) > 0 {
		bs = append(bs, slackgo.NewSectionBlock(nil, fields, nil))
	}
	room := maxBlocks - len(bs)
	if m.Footer != "" {
		room--
	}
	chunks := splitText(m.Text, maxSectionChars)
	if len(chunks) > room {
		chunks = chunks[:max(room, 0)]
		if n := len(chunks); n > 0 {
			chunks[n-1] += "…" // fit cuts it back to size
		}
	}
	for _, c := range chunks {
		bs = append(bs, slackgo.NewSectionBlock(slackgo.NewTextBlockObject(slackgo.MarkdownType, fit(c, maxSectionChars), false, false), nil, nil))
	}
	if f := strings.TrimSpace(m.Footer); f != "" {
		bs = append(bs, slackgo.NewContextBlock("", slackgo.NewTextBlockObject(slackgo.MarkdownType, fit(f, maxContextChars), false, false)))
	}
	return bs
}

// splitText cuts raw text into pieces whose escaped form has at most
// limit characters, at line ends where it can; blank pieces are dropped.
func splitText(raw string, limit int) []string {
	var out []string
	var cur strings.Builder
	n := 0
	flush := func() {
		if s := strings.TrimRight(cur.String(), "\n"); strings.TrimSpace(s) != "" {
			out = append(out, s)
		}
		cur.Reset()
		n = 0
	}
	for _, line := range strings.SplitAfter(raw, "\n") {
		ln := escapedLen(line)
		if n+ln > limit {
			flush()
		}
		if ln <= limit {
			cur.WriteString(line)
			n += ln
			continue
		}
		for _, r := range line {
			if n+escLen(r) > limit {
				flush()
			}
			cur.WriteRune(r)
			n += escLen(r)
		}
	}
	flush()
	return out
}

// fit escapes raw and cuts it, marked with "…", to at most limit
// characters.
func fit(raw string, limit int) string {
	if escapedLen(raw) <= limit {
		return slackutilsx.EscapeMessage(raw)
	}
	var b strings.Builder
	n := 0
	for _, r := range raw {
		if n+escLen(r) > limit-1 {
			break
		}
		b.WriteRune(r)
		n += escLen(r)
	}
	return slackutilsx.EscapeMessage(b.String()) + "…"
}

func escapedLen(s string) int {
	n := 0
	for _, r := range s {
		n += escLen(r)
	}
	return n
}

// escLen is the characters r takes once escaped.
func escLen(r rune) int {
	switch r {
	case '&':
		return len("&amp;")
	case '<', '>':
		return len("&lt;")
	}
	return 1
}

// cut shortens s to at most n characters, marking the cut with "…".
func cut(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}
