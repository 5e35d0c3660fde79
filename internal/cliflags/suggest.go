package cliflags

import (
	"errors"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// maxDistance is the most edits between a typed flag and one suggested,
// cobra's default for commands.
const maxDistance = 2

// Error is a flag error of a command line, with the flags the person
// probably meant (none when nothing is close).
type Error struct {
	Err         error
	Suggestions []string // as typed on a command line: "--state"
}

// Error is the cause, then the suggestions in cobra's words for commands
// (which end in a newline: the usage line that follows stands apart).
func (e *Error) Error() string {
	if len(e.Suggestions) == 0 {
		return e.Err.Error()
	}
	var b strings.Builder
	b.WriteString(e.Err.Error())
	b.WriteString("\n\nDid you mean this?")
	for _, s := range e.Suggestions {
		b.WriteString("\n\t" + s)
	}
	b.WriteString("\n")
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// Suggest wraps err, a flag error cobra met parsing cmd's command line, in
// an *Error suggesting cmd's flags nearest to an unknown one. It suits
// cobra.Command.SetFlagErrorFunc.
func Suggest(cmd *cobra.Command, err error) error {
	e := &Error{Err: err}
	var ne *pflag.NotExistError
	if errors.As(err, &ne) {
		typed := ne.GetSpecifiedName()
		if group := ne.GetSpecifiedShortnames(); group != "" {
			// -sate is read as the shorthands s, a, t, e; --sate was
			// probably meant.
			typed = group
		}
		for _, name := range Suggestions(cmd.Flags(), typed) {
			e.Suggestions = append(e.Suggestions, "--"+name)
		}
	}
	return e
}

// Suggestions returns the names of fs's visible flags within maxDistance
// edits of typed, or starting with it, nearest first.
func Suggestions(fs *pflag.FlagSet, typed string) []string {
	typed = strings.ToLower(strings.TrimLeft(typed, "-"))
	if len(typed) < 2 {
		return nil
	}
	type near struct {
		name string
		d    int
	}
	var found []near
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Hidden || f.Deprecated != "" {
			return
		}
		d := distance(typed, strings.ToLower(f.Name))
		if d <= maxDistance || strings.HasPrefix(f.Name, typed) {
			found = append(found, near{f.Name, d})
		}
	})
	slices.SortFunc(found, func(a, b near) int {
		if a.d != b.d {
			return a.d - b.d
		}
		return strings.Compare(a.name, b.name)
	})
	names := make([]string, len(found))
	for i, n := range found {
		names[i] = n.name
	}
	return names
}

// distance is the Levenshtein distance between a and b, in bytes (flag
// names are ASCII).
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
