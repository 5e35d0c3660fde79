package render

import "regexp"

var (
	// requestLine is an HTTP tool's "POST http://host/path: " in an error:
	// the call, not what went wrong with it.
	requestLine = regexp.MustCompile(`\b(?:GET|POST|PUT|PATCH|DELETE|HEAD|OPTIONS) \S+: `)
	// toolAgain is a tool named twice at the head of an error: "step 0
	// (http_request) failed: http_request: …".
	toolAgain = regexp.MustCompile(`\(([A-Za-z0-9_/-]+)\)( failed)?: ([A-Za-z0-9_/-]+): `)
)

// BriefError is an error as a list's cell shows it, where it is cut: the
// request line and a second naming of the tool go, so that what went wrong
// ("400 Bad Request", "denied") comes before the cut. agentctl show and
// the task page keep it whole.
func BriefError(s string) string {
	s = requestLine.ReplaceAllString(s, "")
	return toolAgain.ReplaceAllStringFunc(s, func(m string) string {
		sub := toolAgain.FindStringSubmatch(m)
		if sub[1] != sub[3] {
			return m
		}
		return "(" + sub[1] + ")" + sub[2] + ": "
	})
}
