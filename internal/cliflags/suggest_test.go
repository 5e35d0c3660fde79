package cliflags

import (
	"errors"
	"slices"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

func TestDistance(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"demo", "demo", 0}, {"dmeo", "demo", 2}, {"sate", "state", 1},
		{"kitten", "sitting", 3}, {"", "abc", 3}, {"abc", "", 3},
	} {
		if got := distance(tc.a, tc.b); got != tc.want {
			t.Errorf("distance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}

func TestSuggestions(t *testing.T) {
	t.Parallel()
	fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
	for _, n := range []string{"state", "state-dir", "demo", "lease", "secret"} {
		fs.String(n, "", "")
	}
	_ = fs.MarkHidden("secret")
	for typed, want := range map[string][]string{
		"sate":   {"state"},
		"stat":   {"state", "state-dir"},
		"dmeo":   {"demo"},
		"DEMO":   {"demo"},
		"secert": nil, // hidden
		"zzzzzz": nil,
		"s":      nil, // too short to guess from
	} {
		if got := Suggestions(fs, typed); !slices.Equal(got, want) {
			t.Errorf("Suggestions(%q) = %q, want %q", typed, got, want)
		}
	}
}

// Through cobra: the unknown flag is wrapped, with suggestions, and the
// cause stays reachable.
func TestSuggestThroughCobra(t *testing.T) {
	t.Parallel()
	for args, want := range map[string]string{
		"--sate":  "unknown flag: --sate\n\nDid you mean this?\n\t--state\n",
		"-sate":   "unknown shorthand flag: 's' in -sate\n\nDid you mean this?\n\t--state\n",
		"--zzzzz": "unknown flag: --zzzzz",
		"--state": "flag needs an argument: --state",
	} {
		cmd := &cobra.Command{Use: "x", RunE: func(*cobra.Command, []string) error { return nil },
			SilenceErrors: true, SilenceUsage: true}
		cmd.Flags().String("state", "", "")
		cmd.SetFlagErrorFunc(Suggest)
		cmd.SetArgs([]string{args})
		err := cmd.Execute()
		var e *Error
		if !errors.As(err, &e) || err.Error() != want {
			t.Errorf("%s: error %q, want an *Error %q", args, err, want)
		}
		var ne *pflag.NotExistError
		if args != "--state" && !errors.As(err, &ne) {
			t.Errorf("%s: the pflag error is not reachable from %v", args, err)
		}
	}
}
