// Package grants says what a tenant's tasks may reach: which kinds it may
// submit, which tools its tasks may call, which hosts (scheme, host and
// port) and whether the operator's secret headers go with them, which Slack
// channels, which models and how many tokens a task may spend.
//
// A grant is enforced where the effect is performed: tools.Path checks
// the tool and what the call reaches before the ledger sees the effect, so
// a call outside the grant records nothing, performs nothing and fails the
// task for good with a *DeniedError naming what is missing. Replays run the
// same check against the grant in force then: a revoked grant stops a
// replay's effects even when the ledger holds their results.
//
// API tenants have no grant until the operator gives one: every kind, but
// no tool and no model. The operator's own tenant, agentledger.OperatorTenant ("default": the
// tenant of agentctl, cron and webhook tasks), may reach everything unless
// the operator stores a narrower grant for it.
//
// Every kind is allowed only when written so (Grant.AllKinds, stored as
// "all_kinds"; the config file's kinds = ["all"]): a grant whose kinds
// list is empty allows none, so revoking the last kind never widens it. It
// is stored as kinds ["!none"] (NoKinds), which older versions read as no
// kind too.
//
// Each stored grant records who set it last (Record.SetBy): the operator
// (Put, Update: agentctl) or a daemon's configuration (Seed, at start). A
// configuration seeds a grant and may replace what it seeded, so that an
// edited file takes effect at the next start, but never replaces the
// operator's, nor a differing grant stored before who set it was recorded:
// a restart cannot undo an operator's revoke. HandToConfig hands a grant
// back to the configuration, in force until a configuration replaces it.
//
// Cache keeps the grants read, so that checking the grant at every effect
// is cheap: until a change is notified while a LISTEN session is up, for a
// second otherwise.
package grants
