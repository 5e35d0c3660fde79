package daemon

import (
	"crypto/subtle"
	"fmt"
	"net/http"
	"os"
	"strings"
)

// guardMetrics returns h, requiring the bearer token in tokenFile when one
// is given: the figures name tenants, schedules and hook sources. The
// token is never logged; errors name the file only.
func guardMetrics(tokenFile string, h http.Handler) (http.Handler, error) {
	if tokenFile == "" {
		return h, nil
	}
	b, err := os.ReadFile(tokenFile)
	if err != nil {
		return nil, fmt.Errorf("metrics token file: %w", err)
	}
	token := strings.TrimSpace(string(b))
	if len(token) < 16 {
		return nil, fmt.Errorf("metrics token file %s: the token must be at least 16 characters", tokenFile)
	}
	want := []byte("Bearer " + token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), want) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="agentledger-metrics"`)
			http.Error(w, "a metrics token is required: Authorization: Bearer <token>", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}), nil
}
