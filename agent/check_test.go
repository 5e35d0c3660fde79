package agent

import (
	"strings"
	"testing"
)

// A base URL go-openai would take and fail every call with is refused
// before any task runs, and the refusal never shows its password.
func TestCheckRefusesABaseURLThatIsNotHTTP(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want string // "" for none
	}{
		{Config{BaseURL: "http://127.0.0.1:8080/v1"}, ""},
		{Config{BaseURL: "https://u:s3cr3t@api.example/v1"}, ""},
		{Config{}, ""},
		{Config{BaseURL: "localhost:8080/v1"}, `base URL "localhost:8080/v1" is not an http(s) URL like https://api.openai.com/v1`},
		{Config{BaseURL: "127.0.0.1:8080/v1"}, `base URL "127.0.0.1:8080/v1" does not parse as a URL`},
		{Config{BaseURL: "user:s3cr3t@localhost:8080/v1"}, `base URL "user:xxxxx@localhost:8080/v1" is not an http(s) URL`},
		{Config{BaseURL: "http://"}, `base URL "http://" is not an http(s) URL`},
		{Config{BaseURL: "ftp://u:s3cr3t@h/v1"}, `base URL "ftp://u:xxxxx@h/v1" is not an http(s) URL`},
		{Config{BaseURL: "http://u:s3cr3t@h x/v1"}, `base URL "http://u:xxxxx@h x/v1" does not parse as a URL`},
		{Config{BaseURL: "ftp://u:s3cr3t@h", AzureAPIVersion: "2024-10-21"}, `azure base URL "ftp://u:xxxxx@h" is not an http(s) URL`},
	} {
		err := c.cfg.Check()
		switch {
		case c.want == "" && err != nil:
			t.Errorf("Check(%q) = %v, want nil", c.cfg.BaseURL, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("Check(%q) = %v, want %q", c.cfg.BaseURL, err, c.want)
		case err != nil && strings.Contains(err.Error(), "s3cr3t"):
			t.Errorf("Check(%q) = %v, which shows the password", c.cfg.BaseURL, err)
		}
	}
}
