package secretfmt

import (
	"net/url"
	"regexp"
	"strings"
)

// URL returns raw, a URL or a keyword/value connection string that may
// hold a password, fit for a log or an error: the password of its user
// info, and the value of any parameter whose name says it is a secret,
// are masked. raw may be malformed (the mistake being reported): what
// does not parse is masked by shape, erring towards masking more.
func URL(raw string) string {
	if keywordForm.MatchString(raw) {
		return keywordSecret.ReplaceAllString(raw, "${1}xxxxx")
	}
	// Parsed, a URL whose '@' follows a '?' would be read as the parser
	// reads it, and a password holding '?' shown as host and query.
	at, q := strings.LastIndex(raw, "@"), strings.Index(raw, "?")
	if u, err := url.Parse(raw); err == nil && u.Scheme != "" && u.Opaque == "" && u.Host != "" && (q < 0 || at < q) {
		if _, has := u.User.Password(); has {
			u.User = url.UserPassword(u.User.Username(), "xxxxx")
		}
		u.RawQuery = maskQuery(u.RawQuery)
		return u.String()
	}
	return byShape(raw)
}

// byShape masks a URL that does not parse. Its query starts at the first
// "?name=" or "&name=" (a password may hold '?', '@' or '/', a parameter
// name none of them), and its user info ends at the last '@' before that:
// a host holds no '@'.
func byShape(raw string) string {
	scheme, rest := "", raw
	if i := strings.Index(rest, "://"); i >= 0 {
		scheme, rest = rest[:i+3], rest[i+3:]
	}
	head, query := rest, ""
	if loc := queryStart.FindStringIndex(rest); loc != nil {
		head, query = rest[:loc[0]], rest[loc[0]:]
	}
	if at := strings.LastIndex(head, "@"); at >= 0 {
		if user, _, hasPassword := strings.Cut(head[:at], ":"); hasPassword {
			head = user + ":xxxxx" + head[at:]
		}
	} else if authority, path, _ := strings.Cut(head, "/"); scheme != "" && badPort.MatchString(authority) {
		// "user:password" with no host looks like host:port; a port is
		// digits.
		host, _, _ := strings.Cut(authority, ":")
		head = host + ":xxxxx"
		if path != "" || strings.Contains(rest, "/") {
			head += "/" + path
		}
	}
	return scheme + head + queryParam.ReplaceAllStringFunc(query, maskParam)
}

// maskQuery masks the values of a raw query's secret parameters, their
// names read decoded (pass%77ord is password).
func maskQuery(q string) string {
	if q == "" {
		return q
	}
	params := strings.Split(q, "&")
	for i, p := range params {
		params[i] = maskParam(p)
	}
	return strings.Join(params, "&")
}

// maskParam masks one "name=value" (with its leading '?' or '&', if any)
// whose name says it is a secret.
func maskParam(p string) string {
	lead := ""
	if p != "" && (p[0] == '?' || p[0] == '&') {
		lead, p = p[:1], p[1:]
	}
	name, _, ok := strings.Cut(p, "=")
	if !ok {
		return lead + p
	}
	decoded, err := url.QueryUnescape(name)
	if err != nil {
		decoded = name
	}
	if secretName.MatchString(decoded) {
		return lead + name + "=xxxxx"
	}
	return lead + p
}

// secretWords are the words that make a parameter's name a secret's.
const secretWords = `(?:password|secret|token|key|code|sig|auth|credential)`

var (
	// keywordForm is a libpq keyword/value string ("host=db password=…").
	keywordForm = regexp.MustCompile(`^\s*[A-Za-z_]+\s*=`)
	// secretName is a parameter whose value is a secret.
	secretName = regexp.MustCompile(`(?i)` + secretWords)
	// keywordSecret is such a parameter with its value in the
	// keyword/value form: single-quoted (to its closing quote, or to the
	// end when it has none), or bare with backslash escapes; a value
	// opened with a double quote (no quoting libpq knows) runs to the
	// next double quote or the end.
	keywordSecret = regexp.MustCompile(`(?i)(\b[a-z_]*` + secretWords + `[a-z_]*\s*=\s*)('(?:[^'\\]|\\.)*(?:'|$)|"[^"]*(?:"|$)|(?:\\.|[^\s\\])*)`)
	// queryStart is where the query of a URL that does not parse starts.
	queryStart = regexp.MustCompile(`[?&][^?&=/@]*=`)
	// queryParam is one parameter of such a query.
	queryParam = regexp.MustCompile(`[?&][^?&]*`)
	// badPort is "host:port" whose port is no number: a user and password.
	badPort = regexp.MustCompile(`^[^:@]+:.*[^0-9,:].*$`)
)
