package migrations

import (
	"strings"
	"testing"
)

// A server older than the migrations need is refused by name before any
// migration runs; 14 and newer pass.
func TestServerOldEnough(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		num     int
		version string
		ok      bool
	}{
		{130012, "13.12", false},
		{139999, "13.99", false},
		{140000, "14.0", true},
		{150018, "15.18 (Debian 15.18-0+deb12u1)", true},
	} {
		err := serverOldEnough(c.num, c.version)
		if (err == nil) != c.ok {
			t.Errorf("server %d: %v, want ok %v", c.num, err, c.ok)
		}
		if err != nil && (!strings.Contains(err.Error(), "PostgreSQL 14 or newer") || !strings.Contains(err.Error(), c.version)) {
			t.Errorf("server %d: %q does not name the version needed and the server's", c.num, err)
		}
	}
}
