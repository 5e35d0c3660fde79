package daemon_test

import (
	"reflect"
	"testing"

	"github.com/agentledger/agentledger/daemon"
)

// Config stays a handful of groups a reader can scan (issue 31): a new
// setting joins the group of the part it configures.
func TestConfigIsGrouped(t *testing.T) {
	if n := reflect.TypeFor[daemon.Config]().NumField(); n > 12 {
		t.Errorf("daemon.Config has %d top-level fields, want at most 12", n)
	}
}
