package slack

import (
	"context"

	slackgo "github.com/slack-go/slack"

	"github.com/agentledger/agentledger/notify"
)

// Button is an interactive button under a message, such as an approval
// request's Approve and Deny: a click sends its ActionID and Value to the
// app's interactivity URL.
type Button struct {
	ActionID string
	Text     string
	Value    string
	// Style is "primary" (green), "danger" (red) or "" (plain).
	Style string
}

// PostButtons is Post with buttons in an actions block under m
// (blockID names the block in the click's payload).
func (s *Sink) PostButtons(ctx context.Context, key string, m notify.Message, blockID string, buttons []Button) (string, error) {
	return s.post(ctx, key, m, actions(blockID, buttons)...)
}

// GroupMembers lists the users of a Slack user group (S…) with
// usergroups.users.list, which needs the usergroups:read scope.
func (s *Sink) GroupMembers(ctx context.Context, group string) ([]string, error) {
	var users []string
	err := s.call(ctx, op{method: "usergroups.users.list"}, func(ctx context.Context) error {
		var err error
		users, err = s.api.GetUserGroupMembersContext(ctx, group)
		return err
	})
	return users, err
}

func actions(blockID string, buttons []Button) []slackgo.Block {
	if len(buttons) == 0 {
		return nil
	}
	els := make([]slackgo.BlockElement, 0, len(buttons))
	for _, b := range buttons {
		e := slackgo.NewButtonBlockElement(b.ActionID, b.Value, slackgo.NewTextBlockObject(slackgo.PlainTextType, cut(b.Text, 75), false, false))
		if b.Style != "" {
			e = e.WithStyle(slackgo.Style(b.Style))
		}
		els = append(els, e)
	}
	return []slackgo.Block{slackgo.NewActionBlock(blockID, els...)}
}
