package tenants

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentledger/agentledger"
)

// ErrUnauthorized: a bearer token is malformed, unknown or revoked. Its
// messages never contain the token.
var ErrUnauthorized = agentledger.NewError(agentledger.CodeUnauthorized, "API token refused")

// Token formats.
const (
	// TokenScheme starts every token, so that a leaked one is recognisable
	// (secret scanners) and a string that is not one is refused unread.
	TokenScheme = "alt_"
	// tokenLen is the scheme and 32 random bytes in unpadded base64url.
	tokenLen = len(TokenScheme) + 43
	// PrefixLen is how much of a token is stored in clear: the scheme and
	// 8 characters (48 random bits), enough to tell tokens apart.
	PrefixLen = len(TokenScheme) + 8
)

// Token is an API token as stored: never the token itself.
type Token struct {
	ID         int64      `json:"id"`
	Tenant     string     `json:"tenant"`
	Name       string     `json:"name"`
	Prefix     string     `json:"prefix"`
	CreatedAt  time.Time  `json:"created_at"`
	LastUsedAt *time.Time `json:"last_used_at"`
	RevokedAt  *time.Time `json:"revoked_at"`
	// ExpiresAt, when set, is when the token stops being accepted.
	ExpiresAt *time.Time `json:"expires_at"`
}

// CreateToken adds a token named name (a label, 1-128 printable
// characters) to tenant and returns it with the token itself, which exists
// nowhere else: only its hash is stored. A ttl above zero makes it expire
// that long from now. Errors: agentledger.ErrInvalid for a bad name or a
// negative ttl, agentledger.ErrNotFound for an unknown tenant.
func (s *Store) CreateToken(ctx context.Context, tenant, name string, ttl time.Duration) (Token, string, error) {
	if ttl < 0 {
		return Token{}, "", agentledger.Invalid("expires_in", "must not be negative")
	}
	var expires any // NULL: never
	if ttl > 0 {
		expires = ttl
	}
	if len(name) < 1 || len(name) > 128 || strings.ContainsFunc(name, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return Token{}, "", agentledger.Invalid("name", "must be 1-128 characters without control characters")
	}
	var raw [32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return Token{}, "", fmt.Errorf("token: %w", err)
	}
	secret := TokenScheme + base64.RawURLEncoding.EncodeToString(raw[:])
	rows, err := s.db.Query(ctx, insertTokenSQL, tenant, name, hash(secret), secret[:PrefixLen], expires)
	if err != nil {
		return Token{}, "", fmt.Errorf("token for tenant %q: %w", tenant, err)
	}
	t, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByPos[Token])
	if errors.Is(err, pgx.ErrNoRows) {
		return Token{}, "", agentledger.Errorf(agentledger.CodeNotFound, "tenant %q does not exist", tenant)
	}
	if err != nil {
		return Token{}, "", fmt.Errorf("token for tenant %q: %w", tenant, err)
	}
	return t, secret, nil
}

// ListTokens returns the tokens of tenant, or of every tenant when it is
// empty, oldest first, revoked ones included. Errors: agentledger.ErrNotFound
// for an unknown tenant.
func (s *Store) ListTokens(ctx context.Context, tenant string) ([]Token, error) {
	rows, err := s.db.Query(ctx, listTokensSQL, tenant)
	if err != nil {
		return nil, fmt.Errorf("tokens: %w", err)
	}
	ts, err := pgx.CollectRows(rows, pgx.RowToStructByPos[Token])
	if err != nil {
		return nil, fmt.Errorf("tokens: %w", err)
	}
	if len(ts) == 0 && tenant != "" {
		var exists bool
		if err := s.db.QueryRow(ctx, tenantExistsSQL, tenant).Scan(&exists); err != nil {
			return nil, fmt.Errorf("tokens: %w", err)
		}
		if !exists {
			return nil, agentledger.Errorf(agentledger.CodeNotFound, "tenant %q does not exist", tenant)
		}
	}
	return ts, nil
}

// RevokeToken revokes the token whose id or prefix is ref: requests bearing
// it are refused from then on. Errors: agentledger.ErrInvalid when ref is
// neither, agentledger.ErrNotFound for no such token, agentledger.ErrConflict
// when it was revoked already (the token is returned too) or when the
// prefix is shared by several tokens (nothing is revoked: use the id).
func (s *Store) RevokeToken(ctx context.Context, ref string) (Token, error) {
	var id int64
	var prefix string
	switch {
	case strings.HasPrefix(ref, TokenScheme) && len(ref) == PrefixLen:
		prefix = ref
	case strings.HasPrefix(ref, TokenScheme) && len(ref) > PrefixLen:
		// Never echo what may be a whole token.
		return Token{}, agentledger.Invalid("token", "give the token's id or its %d-character prefix, not the token", PrefixLen)
	default:
		n, err := strconv.ParseInt(ref, 10, 64)
		if err != nil || n <= 0 {
			return Token{}, agentledger.Invalid("token", "%q is neither a token id nor a token prefix (%s…)", ref, TokenScheme)
		}
		id = n
	}
	sql, arg := revokeByIDSQL, any(id)
	if prefix != "" {
		sql, arg = revokeByPrefixSQL, prefix
	}
	rows, err := s.db.Query(ctx, sql, arg)
	if err != nil {
		return Token{}, fmt.Errorf("revoke token %s: %w", ref, err)
	}
	t, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByPos[Token])
	if err == nil {
		return t, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return Token{}, fmt.Errorf("revoke token %s: %w", ref, err)
	}
	// Nothing changed: say why.
	rows, err = s.db.Query(ctx, findTokensSQL, id, prefix)
	if err != nil {
		return Token{}, fmt.Errorf("revoke token %s: %w", ref, err)
	}
	found, err := pgx.CollectRows(rows, pgx.RowToStructByPos[Token])
	switch {
	case err != nil:
		return Token{}, fmt.Errorf("revoke token %s: %w", ref, err)
	case len(found) == 0:
		return Token{}, agentledger.Errorf(agentledger.CodeNotFound, "token %s does not exist", ref)
	case len(found) > 1:
		return Token{}, agentledger.Errorf(agentledger.CodeConflict, "prefix %s is shared by several tokens, nothing revoked; revoke by id", ref)
	default:
		return found[0], agentledger.Errorf(agentledger.CodeConflict, "token %d is already revoked", found[0].ID)
	}
}

// Authenticate returns the tenant whose token this is. A malformed,
// unknown, revoked or expired token, or one of a disabled tenant, is
// ErrUnauthorized, saying which (for the log: answer all alike). It records the token's use (at most
// once a minute, so a busy token does not write on every request).
func (s *Store) Authenticate(ctx context.Context, token string) (string, error) {
	if len(token) != tokenLen || !strings.HasPrefix(token, TokenScheme) {
		return "", fmt.Errorf("malformed token: %w", ErrUnauthorized)
	}
	var tenant, refused string
	err := s.db.QueryRow(ctx, authenticateSQL, hash(token)).Scan(&tenant, &refused)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return "", fmt.Errorf("unknown token: %w", ErrUnauthorized)
	case err != nil:
		return "", fmt.Errorf("authenticate: %w", err)
	case refused != "":
		return "", fmt.Errorf("token %s: %s: %w", token[:PrefixLen], refused, ErrUnauthorized)
	}
	return tenant, nil
}

func hash(token string) []byte {
	h := sha256.Sum256([]byte(token))
	return h[:]
}
