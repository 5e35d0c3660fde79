package daemon

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"

	"github.com/agentledger/agentledger/httpapi"
)

// guardMetrics returns h, requiring the bearer token in tokenFile when one
// is given: the figures name tenants, schedules and hook sources. A wrong
// token counts against the address's failed-authentication budget with the
// API's tokens, so /metrics is no way around it. The token is never logged;
// errors name the file only.
func guardMetrics(tokenFile string, api *httpapi.Server, h http.Handler) (http.Handler, error) {
	if tokenFile == "" {
		return h, nil
	}
	token, err := metricsToken(tokenFile)
	if err != nil {
		return nil, err
	}
	want := []byte(token)
	check := func(r *http.Request) error {
		got, err := httpapi.BearerToken(r)
		if err != nil {
			return err
		}
		if subtle.ConstantTimeCompare([]byte(got), want) != 1 {
			return errMetricsToken
		}
		return nil
	}
	return api.Guard(check, "a metrics token is required: Authorization: Bearer <token>", h), nil
}

var errMetricsToken = errors.New("not the metrics token")

// metricsToken reads the metrics token from tokenFile; errors name the
// file, never its content.
func metricsToken(tokenFile string) (string, error) {
	b, err := os.ReadFile(tokenFile)
	if err != nil {
		return "", fmt.Errorf("%s: %w", setting("API.MetricsTokenFile", "--metrics-token-file"), err)
	}
	token := strings.TrimSpace(string(b))
	if len(token) < 16 {
		return "", fmt.Errorf("%s %s: the token must be at least 16 characters", setting("API.MetricsTokenFile", "--metrics-token-file"), tokenFile)
	}
	return token, nil
}
