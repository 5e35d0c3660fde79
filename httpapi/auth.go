package httpapi

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/agentledger/agentledger/tenants"
)

// authenticate returns the tenant of the request's bearer token. Every
// failure matches tenants.ErrUnauthorized (401); none shows the token.
func (s *Server) authenticate(r *http.Request) (string, error) {
	vs := r.Header.Values("Authorization")
	if len(vs) == 0 {
		return "", fmt.Errorf("send Authorization: Bearer <token>: %w", tenants.ErrUnauthorized)
	}
	scheme, token, ok := strings.Cut(vs[0], " ")
	if len(vs) > 1 || !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", fmt.Errorf("the Authorization header must be one Bearer token: %w", tenants.ErrUnauthorized)
	}
	tenant, err := s.cfg.Tenants.Authenticate(r.Context(), strings.TrimSpace(token))
	if err != nil {
		return "", err
	}
	if tenant == "" { // an empty tenant would mean every tenant to claims
		return "", fmt.Errorf("token without a tenant: %w", tenants.ErrUnauthorized)
	}
	return tenant, nil
}
