package notify

import (
	"fmt"
	"strings"

	"github.com/agentledger/agentledger/notify/outbox"
)

// Render is the message of a rule's event: a title saying what happened,
// the task's facts in fields, the error or a short result, and a footer
// naming the rule and the event.
func Render(e outbox.Event, p outbox.Payload) Message {
	state := p.State
	if state == "" {
		state = e.Event
	}
	task := fmt.Sprintf("Task %d", e.TaskID)
	if e.Generation > 1 {
		task += fmt.Sprintf(" (run %d)", e.Generation)
	}
	title := task + " " + headline(state)
	fields := []Field{
		{Label: "Task", Value: fmt.Sprint(e.TaskID)},
		{Label: "Kind", Value: p.Kind},
		{Label: "State", Value: state},
		{Label: "Attempt", Value: attempt(p)},
		{Label: "Queue", Value: p.Queue},
		{Label: "Tenant", Value: e.Tenant},
	}
	var text string
	switch {
	case p.Error != "" && state != "succeeded":
		text = "Error: " + oneLine(p.Error, 500)
	case p.Result != "":
		text = "Result: `" + oneLine(p.Result, 300) + "`"
	}
	if text == "" {
		text = title
	}
	return Message{
		Channel: e.Channel,
		Title:   icon(state) + " " + title,
		Fields:  fields,
		Text:    text,
		Footer:  fmt.Sprintf("agentledger · rule %s · event %d", e.Rule, e.ID),
	}
}

func headline(state string) string {
	switch state {
	case "succeeded":
		return "succeeded"
	case "retrying":
		return "failed; retrying"
	case "dead":
		return "failed for good"
	case "cancelled":
		return "was cancelled"
	case "needs_attention":
		return "needs an operator"
	case "compensating":
		return "is undoing its completed effects"
	case "compensated":
		return "undid its completed effects"
	}
	return state
}

// icon is a Slack emoji code for the state.
func icon(state string) string {
	switch state {
	case "succeeded":
		return ":white_check_mark:"
	case "retrying":
		return ":warning:"
	case "dead":
		return ":x:"
	case "cancelled":
		return ":no_entry_sign:"
	case "needs_attention":
		return ":raising_hand:"
	case "compensating":
		return ":rewind:"
	case "compensated":
		return ":leftwards_arrow_with_hook:"
	}
	return ":information_source:"
}

func attempt(p outbox.Payload) string {
	if p.MaxAttempts > 0 {
		return fmt.Sprintf("%d of %d", p.Attempt, p.MaxAttempts)
	}
	return fmt.Sprint(p.Attempt)
}

// oneLine folds whitespace and cuts s to n characters.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
