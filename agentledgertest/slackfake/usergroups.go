package slackfake

import (
	"net/url"
	"slices"
)

// AddGroup creates the user group id (S…) of users, or replaces its
// members.
func (s *Server) AddGroup(id string, users ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.groups == nil {
		s.groups = map[string][]string{}
	}
	s.groups[id] = slices.Clone(users)
}

// groupUsers is usergroups.users.list.
func (s *Server) groupUsers(form url.Values) (any, string) {
	users, ok := s.groups[form.Get("usergroup")]
	if !ok {
		return nil, "no_such_subteam"
	}
	return map[string]any{"ok": true, "users": append([]string{}, users...)}, ""
}
