package slack

import (
	"context"

	slackgo "github.com/slack-go/slack"
)

// Identity is whom a bot token belongs to, as auth.test answers it.
type Identity struct {
	Team, TeamID string
	// User is the bot's user name; BotID is empty for a token that is not
	// a bot token.
	User, UserID, BotID string
}

// Check asks Slack whom the sink's token belongs to (auth.test, which
// needs no scope), so that a wrong token is found when the sink starts
// rather than when a notification fails. A token Slack refuses answers a
// permanent *Error (invalid_auth, not_authed, account_inactive,
// token_revoked, …); an unreachable Slack a transient error.
func (s *Sink) Check(ctx context.Context) (Identity, error) {
	var r *slackgo.AuthTestResponse
	err := s.call(ctx, op{method: "auth.test"}, func(ctx context.Context) error {
		var err error
		r, err = s.api.AuthTestContext(ctx)
		return err
	})
	if err != nil {
		return Identity{}, err
	}
	return Identity{Team: r.Team, TeamID: r.TeamID, User: r.User, UserID: r.UserID, BotID: r.BotID}, nil
}
