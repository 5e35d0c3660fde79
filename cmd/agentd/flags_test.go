package main

import (
	"errors"
	"os/exec"
	"testing"
)

// A mistyped flag gets the flags probably meant and the way to help; it is
// a usage error (exit 2) and nothing starts.
func TestMistypedFlagSuggestsOne(t *testing.T) {
	t.Parallel()
	for args, want := range map[string]string{
		"--dmeo":     "agentd: unknown flag: --dmeo\n\nDid you mean this?\n\t--demo\n\nRun 'agentd --help' for usage.\n",
		"--graec=1s": "agentd: unknown flag: --graec\n\nDid you mean this?\n\t--grace\n\nRun 'agentd --help' for usage.\n",
		"--zzzzzz":   "agentd: unknown flag: --zzzzzz\n\nRun 'agentd --help' for usage.\n",
	} {
		out, err := agentd(t, nil, args).CombinedOutput()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 2 || string(out) != want {
			t.Errorf("agentd %s: %v, output:\n%s\nwant exit 2 and:\n%s", args, err, out, want)
		}
	}
}
