package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/grants"
	"github.com/agentledger/agentledger/tenants"
)

func (a *app) tenantCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "tenant add|list|token|grant|revoke|show|disable|enable|share",
		Short: "Manage the tenants of the HTTP API and their tokens",
		Long: `A tenant is a customer of agentd's HTTP API: it authenticates with bearer
tokens and sees only its own tasks.

A token is shown once, when it is created; only its hash is stored, with its
first 12 characters (its prefix) so that tokens can be told apart. Revoke a
token by its id or prefix; requests bearing it are refused from then on.

A tenant's share (tenant share) is its weight in every claim round and its
cap on running tasks across the fleet.`,
		Args: cobra.NoArgs,
		RunE: a.action(func(context.Context, []string) error {
			return usagef("tenant needs a subcommand: add, list, token, grant, revoke, show, disable, enable or share")
		}),
	}
	token := &cobra.Command{
		Use:   "token create|list|revoke",
		Short: "Manage the API tokens of tenants",
		Args:  cobra.NoArgs,
		RunE: a.action(func(context.Context, []string) error {
			return usagef("tenant token needs a subcommand: create, list or revoke")
		}),
	}
	token.AddCommand(a.tenantTokenCreateCmd(), a.tenantTokenListCmd(), a.tenantTokenRevokeCmd())
	cmd.AddCommand(a.tenantAddCmd(), a.tenantListCmd(), token, a.tenantGrantCmd(), a.tenantRevokeCmd(), a.tenantShowCmd(),
		a.tenantDisableCmd(true), a.tenantDisableCmd(false), a.tenantShareCmd())
	return cmd
}

func (a *app) tenantAddCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "add NAME",
		Short: "Add a tenant",
		Long: `Add a tenant. NAME is 1-128 letters, digits, '_', '.' and '-', starting with a
letter or digit; it becomes the tenant of the tasks its tokens submit. A name
already taken is refused (exit 1).

With --output json it prints the tenant.`,
		Example: `  agentctl tenant add acme
  agentctl tenant token create acme --name ci`,
		Args: tenantArgs(1, "one tenant name"),
		RunE: a.action(func(ctx context.Context, args []string) error { return a.tenantAdd(ctx, args[0]) }),
	}
}

func (a *app) tenantListCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List the tenants",
		Long:    `List the tenants by name. With --output json it prints an array of tenants.`,
		Args:    cobra.NoArgs,
		RunE:    a.action(func(ctx context.Context, _ []string) error { return a.tenantList(ctx) }),
	}
}

func (a *app) tenantTokenCreateCmd() *cobra.Command {
	var (
		name    string
		expires time.Duration
	)
	cmd := &cobra.Command{
		Use:   "create TENANT [--name LABEL] [--expires-in DURATION]",
		Short: "Create an API token for a tenant",
		Long: `Create a bearer token for TENANT and print it on standard output, alone on
its line, so that it can be captured. It is shown this once: only its hash is
stored. Store it now, in a secret manager or the client's configuration.

With --expires-in it is refused once that time has passed.

With --output json it prints the token's record with the token in "token".`,
		Example: `  agentctl tenant token create acme --name ci
  TOKEN=$(agentctl tenant token create acme --name deploy --expires-in 720h)`,
		Args: tenantArgs(1, "one tenant name"),
		RunE: a.action(func(ctx context.Context, args []string) error {
			return a.tenantTokenCreate(ctx, args[0], name, expires)
		}),
	}
	cmd.Flags().StringVar(&name, "name", "default", "label telling this token apart from the tenant's others (1-128 characters)")
	cmd.Flags().DurationVar(&expires, "expires-in", 0, "the token is refused after this long (e.g. 720h); 0: never")
	return cmd
}

func (a *app) tenantTokenListCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "list [TENANT]",
		Aliases: []string{"ls"},
		Short:   "List API tokens (never the tokens themselves)",
		Long: `List the tokens of TENANT, or of every tenant, oldest first, revoked ones
included: their ids, labels and prefixes, when they were created, last used
(recorded at most once a minute) and revoked.

With --output json it prints an array of tokens.`,
		Args: cobra.MaximumNArgs(1),
		RunE: a.action(func(ctx context.Context, args []string) error {
			tenant := ""
			if len(args) == 1 {
				tenant = args[0]
			}
			return a.tenantTokenList(ctx, tenant)
		}),
	}
}

func (a *app) tenantTokenRevokeCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "revoke ID|PREFIX",
		Short: "Revoke an API token",
		Long: `Revoke a token, named by its id or its prefix (as agentctl tenant token list
shows them): requests bearing it are refused (401) from then on. A token
already revoked, or a prefix several tokens share, is refused (exit 1).

With --output json it prints the revoked token's record.`,
		Example: `  agentctl tenant token revoke 3
  agentctl tenant token revoke alt_Zm9vYmFy`,
		Args: tenantArgs(1, "one token id or prefix"),
		RunE: a.action(func(ctx context.Context, args []string) error { return a.tenantTokenRevoke(ctx, args[0]) }),
	}
}

// tenantArgs accepts exactly n arguments, described by what.
func tenantArgs(n int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return usagef("%s takes %s, got %d arguments", commandName(cmd), what, len(args))
		}
		return nil
	}
}

// tenantStore opens the database, checks that its schema is migrated and
// returns its tenants.
func (a *app) tenantStore(ctx context.Context) (*tenants.Store, error) {
	db, err := a.open(ctx)
	if err != nil {
		return nil, err
	}
	if err := a.checkSchema(ctx, db); err != nil {
		return nil, err
	}
	return tenants.NewStore(db.Pool), nil
}

// noteUnfinished says, on stderr, how many of tenant's tasks (of kind,
// when not "") that cancel --all acts on are left as they are by what an
// operator just did (what: "disabling it refuses its tokens"), and how to
// stop them. A count that fails says nothing.
func (a *app) noteUnfinished(ctx context.Context, tenant, kind, what string) {
	s, err := a.store(ctx)
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second) // a note, not worth holding up an emergency revoke
	defer cancel()
	counts, err := s.Count(ctx, claims.ListParams{Tenant: tenant, Kind: kind, States: cancellable})
	if err != nil {
		return
	}
	var n int64
	for _, c := range counts {
		n += c
	}
	if n == 0 {
		return
	}
	which, flags := "", "--tenant "+grants.ShellQuote(tenant)
	if kind != "" {
		which, flags = " of kind "+kind, flags+" --kind "+grants.ShellQuote(kind)
	}
	fmt.Fprintf(a.stderr, "agentctl: note: %s, not its tasks: %d%s not finished are left to run (agentctl cancel --all %s stops them)\n",
		what, n, which, flags)
}

// invalidAs reports an invalid input under the name the user typed.
func invalidAs(err error, field string) error {
	var ie *agentledger.InvalidError
	if errors.As(err, &ie) {
		return agentledger.Invalid(field, "%s", ie.Problem)
	}
	return err
}

// tenantNotFound is the error for an unknown tenant; the hint says how to
// make it, unless its name is reserved (the operator's own tenant has no
// row, and no token: its tokens would reach every operator task).
func tenantNotFound(name string, err error) error {
	hint := "agentctl tenant list shows the tenants; agentctl tenant add " + name + " creates it"
	if tenants.CheckNewName(name) != nil && tenants.CheckName(name) == nil {
		hint = fmt.Sprintf("%q is reserved and has no tokens: it is the tenant of agentctl, cron and webhook tasks; "+
			"an API client is a tenant of its own (agentctl tenant add NAME)", name)
	}
	return withHint(newError(fmt.Sprintf("tenant %q not found", name), err), hint)
}

func (a *app) tenantAdd(ctx context.Context, name string) error {
	if err := tenants.CheckNewName(name); err != nil {
		return invalidAs(err, "tenant name")
	}
	s, err := a.tenantStore(ctx)
	if err != nil {
		return err
	}
	t, err := s.CreateTenant(ctx, name)
	if errors.Is(err, agentledger.ErrConflict) {
		return withHint(newError(fmt.Sprintf("tenant %q already exists", name), err),
			"agentctl tenant token create "+name+" makes it a new token")
	}
	if err != nil {
		return err
	}
	if a.wantJSON() {
		return printJSON(a.stdout, t)
	}
	_, err = fmt.Fprintf(a.stdout, "tenant %s added; give it a token with: agentctl tenant token create %s\n", t.Name, t.Name)
	return err
}

func (a *app) tenantList(ctx context.Context) error {
	s, err := a.tenantStore(ctx)
	if err != nil {
		return err
	}
	ts, err := s.ListTenants(ctx)
	if err != nil {
		return err
	}
	if done, err := listed(a, ts, "no tenants"); done {
		return err
	}
	t := newTable(a.stdout, "NAME", "CREATED", "DISABLED")
	for _, x := range ts {
		t.row(x.Name, stamp(x.CreatedAt), stampPtr(x.DisabledAt))
	}
	return t.flush()
}

// createdToken is token create's JSON output: the record and, this once,
// the token.
type createdToken struct {
	tenants.Token
	Secret string `json:"token"`
}

func (a *app) tenantTokenCreate(ctx context.Context, tenant, name string, expires time.Duration) error {
	s, err := a.tenantStore(ctx)
	if err != nil {
		return err
	}
	if expires < 0 {
		return agentledger.Invalid("--expires-in", "must not be negative")
	}
	tok, secret, err := s.CreateToken(ctx, tenant, name, expires)
	switch {
	case errors.Is(err, agentledger.ErrInvalid):
		return invalidAs(err, "--name")
	case errors.Is(err, agentledger.ErrNotFound):
		return tenantNotFound(tenant, err)
	case err != nil:
		return err
	}
	if a.wantJSON() {
		err = printJSON(a.stdout, createdToken{Token: tok, Secret: secret})
	} else {
		_, err = fmt.Fprintln(a.stdout, secret)
	}
	fmt.Fprintf(a.stderr, "token %d (%s, %q) created for tenant %s\n"+
		"warning: this is the only time the token is shown: store it now; only its hash is kept\n",
		tok.ID, tok.Prefix, tok.Name, tok.Tenant)
	return err
}

func (a *app) tenantTokenList(ctx context.Context, tenant string) error {
	s, err := a.tenantStore(ctx)
	if err != nil {
		return err
	}
	toks, err := s.ListTokens(ctx, tenant)
	if errors.Is(err, agentledger.ErrNotFound) {
		return tenantNotFound(tenant, err)
	}
	if err != nil {
		return err
	}
	if done, err := listed(a, toks, "no tokens"); done {
		return err
	}
	t := newTable(a.stdout, "ID", "TENANT", "NAME", "PREFIX", "CREATED", "LAST USED", "REVOKED", "EXPIRES")
	for _, x := range toks {
		t.row(fmt.Sprint(x.ID), x.Tenant, x.Name, x.Prefix, stamp(x.CreatedAt), stampPtr(x.LastUsedAt), stampPtr(x.RevokedAt),
			stampPtr(x.ExpiresAt))
	}
	return t.flush()
}

func (a *app) tenantTokenRevoke(ctx context.Context, ref string) error {
	s, err := a.tenantStore(ctx)
	if err != nil {
		return err
	}
	tok, err := s.RevokeToken(ctx, ref)
	hint := "agentctl tenant token list shows the tokens"
	switch {
	case errors.Is(err, agentledger.ErrInvalid):
		return invalidAs(err, "token")
	case errors.Is(err, agentledger.ErrNotFound):
		return withHint(newError(fmt.Sprintf("token %q not found", ref), err), hint)
	case errors.Is(err, agentledger.ErrConflict) && tok.RevokedAt != nil:
		return newError(fmt.Sprintf("token %d (%s) is already revoked, since %s", tok.ID, tok.Prefix, stamp(*tok.RevokedAt)), err)
	case errors.Is(err, agentledger.ErrConflict):
		return withHint(newError(fmt.Sprintf("prefix %s is shared by several tokens: nothing revoked", ref), err),
			"revoke by id; "+hint)
	case err != nil:
		return err
	}
	if a.wantJSON() {
		return printJSON(a.stdout, tok)
	}
	_, err = fmt.Fprintf(a.stdout, "token %d (%s, %q) of tenant %s revoked: requests bearing it are refused from now on\n",
		tok.ID, tok.Prefix, tok.Name, tok.Tenant)
	return err
}

// tenantDisableCmd is tenant disable (disable true) or tenant enable.
func (a *app) tenantDisableCmd(disable bool) *cobra.Command {
	verb, long := "enable", `Enable TENANT again: its tokens that are neither revoked nor expired are
accepted again.`
	if disable {
		verb, long = "disable", `Disable TENANT: every request bearing one of its tokens is refused (401)
from now on, until agentctl tenant enable. Its tasks are left as they are.`
	}
	return &cobra.Command{
		Use:   verb + " TENANT",
		Short: strings.ToUpper(verb[:1]) + verb[1:] + " a tenant's API tokens",
		Long:  long + "\n\nWith --output json it prints the tenant.",
		Args:  tenantArgs(1, "one tenant name"),
		RunE: a.action(func(ctx context.Context, args []string) error {
			s, err := a.tenantStore(ctx)
			if err != nil {
				return err
			}
			t, err := s.SetDisabled(ctx, args[0], disable)
			if errors.Is(err, agentledger.ErrNotFound) {
				return tenantNotFound(args[0], err)
			}
			if err != nil {
				return err
			}
			if a.wantJSON() {
				return printJSON(a.stdout, t)
			}
			if t.DisabledAt != nil {
				_, err = fmt.Fprintf(a.stdout, "tenant %s disabled since %s: its tokens are refused\n", t.Name, stamp(*t.DisabledAt))
				a.noteUnfinished(ctx, t.Name, "", "disabling tenant "+t.Name+" refuses its tokens")
			} else {
				_, err = fmt.Fprintf(a.stdout, "tenant %s enabled\n", t.Name)
			}
			return err
		}),
	}
}
