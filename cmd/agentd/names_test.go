package main

import "testing"

// agentd's messages name its flags and variables, not the fields of a
// program embedding the daemon.
func TestAgentdNames(t *testing.T) {
	for in, want := range map[string]string{
		"Worker.Heartbeat (agentd --heartbeat): 2s must be positive":                              "--heartbeat: 2s must be positive",
		"for Slack set Notify.SlackToken (agentd's AGENTLEDGER_SLACK_TOKEN)":                      "for Slack set AGENTLEDGER_SLACK_TOKEN",
		`Policy.ToolApprovals["refund"] (agentd --approve-tools): OnTimeout "bogus" must be deny`: `--approve-tools ["refund"]: OnTimeout "bogus" must be deny`,
		"Database.StateDir (agentd --state-dir or AGENTLEDGER_STATE_DIR) /x: not a directory":     "--state-dir or AGENTLEDGER_STATE_DIR /x: not a directory",
		"a message naming no setting (agentd's own)":                                              "a message naming no setting (agentd's own)",
	} {
		if got := agentdNames(in); got != want {
			t.Errorf("agentdNames(%q)\n = %q\nwant %q", in, got, want)
		}
	}
}
