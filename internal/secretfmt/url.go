package secretfmt

import (
	"regexp"
	"strings"
)

// URL returns raw, a URL or a keyword/value connection string that may
// hold a password, fit for a log or an error: the password of its user
// info, and the value of any parameter whose name says it is a secret,
// are masked. raw may be malformed (the mistake being reported): user
// info is found by shape, not by parsing, so a URL without a scheme or
// with an unescaped '@' or '/' in its password is masked too.
func URL(raw string) string {
	if !strings.Contains(raw, "://") && keywordForm.MatchString(raw) {
		return secretValue.ReplaceAllString(raw, "${1}xxxxx")
	}
	scheme, rest := "", raw
	if i := strings.Index(rest, "://"); i >= 0 {
		scheme, rest = rest[:i+3], rest[i+3:]
	}
	// The host follows the last '@': a password may hold '@', '/' or '?'
	// unescaped, a host none of them. (An '@' in the query masks more than
	// the password, never less.)
	userinfo, hostAndAfter := "", rest
	if at := strings.LastIndex(rest, "@"); at >= 0 {
		userinfo, hostAndAfter = rest[:at+1], rest[at+1:]
		if user, _, hasPassword := strings.Cut(userinfo, ":"); hasPassword {
			userinfo = user + ":xxxxx@"
		}
	}
	// The query starts at the first '?' past the user info.
	path, query, hasQuery := strings.Cut(hostAndAfter, "?")
	out := scheme + userinfo + path
	if hasQuery {
		params := strings.Split(query, "&")
		for i, p := range params {
			if name, _, ok := strings.Cut(p, "="); ok && secretName.MatchString(name) {
				params[i] = name + "=xxxxx"
			}
		}
		out += "?" + strings.Join(params, "&")
	}
	return out
}

var (
	// keywordForm is a libpq keyword/value string ("host=db password=…").
	keywordForm = regexp.MustCompile(`^\s*[A-Za-z_]+\s*=`)
	// secretName is a parameter whose value is a secret.
	secretName = regexp.MustCompile(`(?i)(password|secret|token|key)`)
	// secretValue is such a parameter with its value, quoted or not, in
	// the keyword/value form.
	secretValue = regexp.MustCompile(`(?i)(\b[a-z_]*(?:password|secret|token|key)[a-z_]*\s*=\s*)('(?:[^'\\]|\\.)*'|\S*)`)
)
