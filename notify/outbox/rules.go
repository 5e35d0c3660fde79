package outbox

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/agentledger/agentledger"
)

// Events are the task states a rule can ask to hear about, in the order a
// task may pass through them.
var Events = []string{"retrying", "needs_attention", "succeeded", "dead", "cancelled", "compensating", "compensated"}

// DefaultEvents are a rule's events when none are given: every one, so that
// a message follows its task to the end.
var DefaultEvents = Events

// Rule says which task state changes notify which channel. Empty Tenant,
// Queue or Kind match every one.
type Rule struct {
	Name    string
	Tenant  string
	Queue   string
	Kind    string
	Events  []string
	Channel string
	// Disabled rules write no events.
	Disabled bool

	CreatedAt time.Time
	UpdatedAt time.Time
}

var ruleName = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]{0,62}$`)

// Validate checks a rule before it is stored.
func (r *Rule) Validate() error {
	switch {
	case !ruleName.MatchString(r.Name):
		return agentledger.Invalid("name", "%q must be 1-63 characters of a-z, 0-9, '_', '.', '-', starting with a letter or digit", r.Name)
	case r.Channel == "" || len(r.Channel) > 80 || strings.ContainsFunc(r.Channel, func(c rune) bool { return c <= ' ' || c == 0x7f }):
		return agentledger.Invalid("channel", "%q must be 1-80 characters without spaces", r.Channel)
	case len(r.Events) == 0:
		return agentledger.Invalid("events", "name at least one of %s", strings.Join(Events, ", "))
	}
	for _, e := range r.Events {
		if !slices.Contains(Events, e) {
			return agentledger.Invalid("events", "%q is not one of %s", e, strings.Join(Events, ", "))
		}
	}
	// A filter a task could never carry would match nothing, unseen.
	for _, f := range []struct{ name, v string }{{"tenant", r.Tenant}, {"queue", r.Queue}, {"kind", r.Kind}} {
		if f.v != "" && !agentledger.ValidName(f.v) {
			return agentledger.Invalid(f.name, "%q must be 1-128 characters of letters, digits, '.', '_', ':' or '-'", f.v)
		}
	}
	return nil
}

// Rules manages the notification rules.
type Rules struct{ db DB }

// NewRules returns the rules of db.
func NewRules(db DB) *Rules { return &Rules{db: db} }

// Put stores r: a new rule, or with replace, a new version of the rule of
// that name. Without replace an existing name is ErrConflict. Events are
// stored deduplicated in their canonical order.
func (s *Rules) Put(ctx context.Context, r Rule, replace bool) (Rule, error) {
	if err := r.Validate(); err != nil {
		return Rule{}, err
	}
	var evs []string
	for _, e := range Events {
		if slices.Contains(r.Events, e) {
			evs = append(evs, e)
		}
	}
	sql := insertRuleSQL
	if replace {
		sql = upsertRuleSQL
	}
	rows, err := s.db.Query(ctx, sql, r.Name, r.Tenant, r.Queue, r.Kind, evs, r.Channel, !r.Disabled)
	if err != nil {
		return Rule{}, fmt.Errorf("notification rule %q: %w", r.Name, err)
	}
	out, err := pgx.CollectExactlyOneRow(rows, scanRule)
	var pgErr *pgconn.PgError
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return Rule{}, agentledger.Errorf(agentledger.CodeConflict, "notification rule %q exists (replace it, or remove it first)", r.Name)
	case errors.As(err, &pgErr) && pgErr.Code == "42P01":
		return Rule{}, fmt.Errorf("notification rules: the database is not migrated (run agentctl migrate up): %w", err)
	case err != nil:
		return Rule{}, fmt.Errorf("notification rule %q: %w", r.Name, err)
	}
	return out, nil
}

// List returns every rule by name.
func (s *Rules) List(ctx context.Context) ([]Rule, error) {
	rows, err := s.db.Query(ctx, listRulesSQL)
	if err != nil {
		return nil, fmt.Errorf("notification rules: %w", err)
	}
	out, err := pgx.CollectRows(rows, scanRule)
	if err != nil {
		return nil, fmt.Errorf("notification rules: %w", err)
	}
	return out, nil
}

// SetEnabled pauses or resumes a rule, and says whether it was enabled
// before. Events already written are still delivered.
func (s *Rules) SetEnabled(ctx context.Context, name string, enabled bool) (was bool, err error) {
	err = s.db.QueryRow(ctx, enableRuleSQL, name, enabled).Scan(&was)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, agentledger.Errorf(agentledger.CodeNotFound, "notification rule %q does not exist", name)
	}
	if err != nil {
		return false, fmt.Errorf("notification rule %q: %w", name, err)
	}
	return was, nil
}

// Remove deletes a rule. Its events already written are still delivered.
func (s *Rules) Remove(ctx context.Context, name string) error {
	tag, err := s.db.Exec(ctx, deleteRuleSQL, name)
	if err != nil {
		return fmt.Errorf("notification rule %q: %w", name, err)
	}
	if tag.RowsAffected() == 0 {
		return agentledger.Errorf(agentledger.CodeNotFound, "notification rule %q does not exist", name)
	}
	return nil
}

func scanRule(row pgx.CollectableRow) (Rule, error) {
	var r Rule
	var enabled bool
	err := row.Scan(&r.Name, &r.Tenant, &r.Queue, &r.Kind, &r.Events, &r.Channel, &enabled, &r.CreatedAt, &r.UpdatedAt)
	r.Disabled = !enabled
	return r, err
}
