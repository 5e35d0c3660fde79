package tenants_test

import (
	"context"
	"errors"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/internal/test/testdb"
	"github.com/agentledger/agentledger/tenants"
)

func TestTenants(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := tenants.NewStore(testdb.New(t))

	for _, bad := range []string{"", "-acme", "has space", "a/b", strings.Repeat("a", 129), "é"} {
		if _, err := s.CreateTenant(ctx, bad); !errors.Is(err, agentledger.ErrInvalid) {
			t.Errorf("CreateTenant(%q): %v, want ErrInvalid", bad, err)
		}
	}
	for _, name := range []string{"zeta", "acme", "A.b_c-1"} {
		got, err := s.CreateTenant(ctx, name)
		if err != nil || got.Name != name || got.CreatedAt.IsZero() {
			t.Fatalf("CreateTenant(%q) = %+v, %v", name, got, err)
		}
	}
	if _, err := s.CreateTenant(ctx, "acme"); !errors.Is(err, agentledger.ErrConflict) {
		t.Errorf("CreateTenant twice: %v, want ErrConflict", err)
	}
	ts, err := s.ListTenants(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, x := range ts {
		names = append(names, x.Name)
	}
	if got := strings.Join(names, ","); got != "A.b_c-1,acme,zeta" {
		t.Errorf("ListTenants = %s", got)
	}
	for name, want := range map[string]bool{"acme": true, agentledger.OperatorTenant: true, "acm": false, "ACME": false} {
		if got, err := s.Exists(ctx, name); err != nil || got != want {
			t.Errorf("Exists(%q) = %v, %v, want %v", name, got, err, want)
		}
	}
}

var tokenShape = regexp.MustCompile(`^alt_[A-Za-z0-9_-]{43}$`)

func TestTokens(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	s := tenants.NewStore(db)
	for _, n := range []string{"acme", "globex"} {
		if _, err := s.CreateTenant(ctx, n); err != nil {
			t.Fatal(err)
		}
	}

	if _, _, err := s.CreateToken(ctx, "nosuch", "ci", 0); !errors.Is(err, agentledger.ErrNotFound) {
		t.Errorf("token for unknown tenant: %v, want ErrNotFound", err)
	}
	if _, _, err := s.CreateToken(ctx, "acme", "", 0); !errors.Is(err, agentledger.ErrInvalid) {
		t.Errorf("token without a name: %v, want ErrInvalid", err)
	}
	tok, secret, err := s.CreateToken(ctx, "acme", "ci", 0)
	if err != nil {
		t.Fatal(err)
	}
	if !tokenShape.MatchString(secret) || tok.Prefix != secret[:tenants.PrefixLen] || tok.Tenant != "acme" || tok.Name != "ci" {
		t.Fatalf("CreateToken = %+v, %q", tok, secret)
	}
	tok2, secret2, err := s.CreateToken(ctx, "globex", "deploy", 0)
	if err != nil {
		t.Fatal(err)
	}
	if secret2 == secret {
		t.Fatal("two tokens are equal")
	}

	// Only the hash and the prefix are stored.
	var stored int
	if err := db.QueryRow(ctx, `SELECT count(*) FROM api_tokens WHERE position($1::bytea IN token_hash) > 0
		OR prefix = $2 OR name = $2`, []byte(secret), secret).Scan(&stored); err != nil || stored != 0 {
		t.Errorf("the token is stored in clear (%d rows, %v)", stored, err)
	}

	// Authenticate: the right tenant, the use recorded; bad tokens refused
	// without the token in the error.
	for _, c := range []struct{ token, tenant string }{{secret, "acme"}, {secret2, "globex"}} {
		got, err := s.Authenticate(ctx, c.token)
		if err != nil || got != c.tenant {
			t.Errorf("Authenticate = %q, %v; want %s", got, err, c.tenant)
		}
	}
	unknown := secret[:len(secret)-1] + "A"
	if unknown == secret {
		unknown = secret[:len(secret)-1] + "B"
	}
	for _, bad := range []string{"", "alt_", "Bearer " + secret, secret + "x", unknown, strings.ToUpper(secret)} {
		_, err := s.Authenticate(ctx, bad)
		if !errors.Is(err, tenants.ErrUnauthorized) {
			t.Errorf("Authenticate(%q): %v, want ErrUnauthorized", bad, err)
		}
		if err != nil && bad != "" && strings.Contains(err.Error(), bad) {
			t.Errorf("the error %q shows the token", err)
		}
	}

	list, err := s.ListTokens(ctx, "acme")
	if err != nil || len(list) != 1 || list[0].ID != tok.ID || list[0].LastUsedAt == nil {
		t.Fatalf("ListTokens(acme) = %+v, %v (want one token, used)", list, err)
	}
	all, err := s.ListTokens(ctx, "")
	if err != nil || len(all) != 2 || all[1].ID != tok2.ID {
		t.Fatalf("ListTokens() = %+v, %v", all, err)
	}
	if _, err := s.ListTokens(ctx, "nosuch"); !errors.Is(err, agentledger.ErrNotFound) {
		t.Errorf("ListTokens(nosuch): %v, want ErrNotFound", err)
	}

	// Revoke by prefix, then by id; twice is a conflict; unknown is not found.
	for _, bad := range []string{"", "x", "-1", "0", secret} {
		_, err := s.RevokeToken(ctx, bad)
		if !errors.Is(err, agentledger.ErrInvalid) {
			t.Errorf("RevokeToken(%q): %v, want ErrInvalid", bad, err)
		}
		if err != nil && bad == secret && strings.Contains(err.Error(), secret) {
			t.Errorf("the error %q shows the token", err)
		}
	}
	got, err := s.RevokeToken(ctx, tok.Prefix)
	if err != nil || got.ID != tok.ID || got.RevokedAt == nil {
		t.Fatalf("RevokeToken(prefix) = %+v, %v", got, err)
	}
	if _, err := s.Authenticate(ctx, secret); !errors.Is(err, tenants.ErrUnauthorized) {
		t.Errorf("revoked token: %v, want ErrUnauthorized", err)
	}
	if got, err := s.RevokeToken(ctx, strconv.FormatInt(tok.ID, 10)); !errors.Is(err, agentledger.ErrConflict) || got.ID != tok.ID {
		t.Errorf("revoking twice: %+v, %v; want ErrConflict", got, err)
	}
	if _, err := s.RevokeToken(ctx, "999999"); !errors.Is(err, agentledger.ErrNotFound) {
		t.Errorf("unknown id: %v, want ErrNotFound", err)
	}
	if _, err := s.RevokeToken(ctx, "alt_zzzzzzzz"); !errors.Is(err, agentledger.ErrNotFound) {
		t.Errorf("unknown prefix: %v, want ErrNotFound", err)
	}
	if _, err := s.RevokeToken(ctx, strconv.FormatInt(tok2.ID, 10)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Authenticate(ctx, secret2); !errors.Is(err, tenants.ErrUnauthorized) {
		t.Errorf("revoked token: %v, want ErrUnauthorized", err)
	}
}

// TestRevokeSharedPrefix: a prefix two tokens share revokes neither.
func TestRevokeSharedPrefix(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	s := tenants.NewStore(db)
	if _, err := s.CreateTenant(ctx, "acme"); err != nil {
		t.Fatal(err)
	}
	a, _, err := s.CreateToken(ctx, "acme", "a", 0)
	if err != nil {
		t.Fatal(err)
	}
	b, _, err := s.CreateToken(ctx, "acme", "b", 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(ctx, `UPDATE api_tokens SET prefix = $1 WHERE id = $2`, a.Prefix, b.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.RevokeToken(ctx, a.Prefix); !errors.Is(err, agentledger.ErrConflict) {
		t.Fatalf("shared prefix: %v, want ErrConflict", err)
	}
	list, err := s.ListTokens(ctx, "acme")
	if err != nil {
		t.Fatal(err)
	}
	for _, tok := range list {
		if tok.RevokedAt != nil {
			t.Errorf("token %d revoked through a shared prefix", tok.ID)
		}
	}
}

// TestAuthenticateConcurrently: many requests with one token at once all
// pass, and the use is recorded once.
func TestAuthenticateConcurrently(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	s := tenants.NewStore(db)
	if _, err := s.CreateTenant(ctx, "acme"); err != nil {
		t.Fatal(err)
	}
	_, secret, err := s.CreateToken(ctx, "acme", "ci", 0)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for range 20 {
		wg.Go(func() {
			if tenant, err := s.Authenticate(ctx, secret); err != nil || tenant != "acme" {
				errs <- errors.Join(err, errors.New("tenant "+tenant))
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	// A use within the minute writes nothing.
	var before, after string
	if err := db.QueryRow(ctx, `SELECT last_used_at::text FROM api_tokens`).Scan(&before); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Authenticate(ctx, secret); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRow(ctx, `SELECT last_used_at::text FROM api_tokens`).Scan(&after); err != nil {
		t.Fatal(err)
	}
	if before != after {
		t.Errorf("last_used_at moved within a minute: %s → %s", before, after)
	}
	// An hour later, the next use is recorded.
	if _, err := db.Exec(ctx, `UPDATE api_tokens SET last_used_at = now() - interval '1 hour'`); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Authenticate(ctx, secret); err != nil {
		t.Fatal(err)
	}
	var fresh bool
	if err := db.QueryRow(ctx, `SELECT last_used_at > now() - interval '1 minute' FROM api_tokens`).Scan(&fresh); err != nil || !fresh {
		t.Errorf("last_used_at not refreshed after an hour (%v)", err)
	}
}

// The operator's tenant and the project's namespace cannot be created as API
// tenants; nothing is stored.
func TestReservedNames(t *testing.T) {
	t.Parallel()
	db := testdb.Open(t, testdb.URL(t))
	s := tenants.NewStore(db)
	for _, name := range []string{"default", "DEFAULT", "agentledger", "agentledger-ops"} {
		if _, err := s.CreateTenant(context.Background(), name); !errors.Is(err, agentledger.ErrInvalid) || !strings.Contains(err.Error(), "reserved") {
			t.Errorf("%s: %v, want reserved", name, err)
		}
	}
	if ts, err := s.ListTenants(context.Background()); err != nil || len(ts) != 0 {
		t.Errorf("tenants %v %v", ts, err)
	}
}

// A disabled tenant's tokens and an expired token are refused, saying why;
// enabling the tenant again accepts its tokens.
func TestDisabledTenantAndExpiredToken(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := tenants.NewStore(testdb.Open(t, testdb.URL(t)))
	if _, err := s.CreateTenant(ctx, "acme"); err != nil {
		t.Fatal(err)
	}
	_, token, err := s.CreateToken(ctx, "acme", "ci", 0)
	if err != nil {
		t.Fatal(err)
	}
	_, short, err := s.CreateToken(ctx, "acme", "short", time.Microsecond)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Authenticate(ctx, short); !errors.Is(err, tenants.ErrUnauthorized) || !strings.Contains(err.Error(), "expired") {
		t.Errorf("expired token: %v", err)
	}
	if tn, err := s.SetDisabled(ctx, "acme", true); err != nil || tn.DisabledAt == nil {
		t.Fatalf("disable: %+v %v", tn, err)
	}
	if _, err := s.Authenticate(ctx, token); !errors.Is(err, tenants.ErrUnauthorized) || !strings.Contains(err.Error(), "tenant disabled") {
		t.Errorf("token of a disabled tenant: %v", err)
	}
	if _, err := s.SetDisabled(ctx, "acme", false); err != nil {
		t.Fatal(err)
	}
	if tenant, err := s.Authenticate(ctx, token); err != nil || tenant != "acme" {
		t.Errorf("after enable: %q %v", tenant, err)
	}
	if _, err := s.SetDisabled(ctx, "nosuch", true); !errors.Is(err, agentledger.ErrNotFound) {
		t.Errorf("unknown tenant: %v", err)
	}
	if _, _, err := s.CreateToken(ctx, "acme", "neg", -time.Second); !errors.Is(err, agentledger.ErrInvalid) {
		t.Errorf("negative expiry: %v", err)
	}
}
