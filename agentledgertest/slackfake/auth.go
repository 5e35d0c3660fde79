package slackfake

import "net/url"

// The identity auth.test answers for the configured token.
const (
	teamName = "Fake Workspace"
	teamID   = "T0FAKE"
	botUser  = "agentledger"
	botID    = "B0FAKE"
)

// authTest is auth.test: the token was checked by serve, so it answers
// whom the token belongs to.
func (s *Server) authTest(url.Values) (any, string) {
	return map[string]any{"ok": true, "url": "https://fake.example/", "team": teamName, "team_id": teamID,
		"user": botUser, "user_id": "U0FAKE", "bot_id": botID}, ""
}
