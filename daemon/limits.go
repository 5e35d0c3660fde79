package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/agentledger/agentledger/flow"
)

// slackChannelDefault is the fleet's pace on every Slack channel unless an
// operator or the configuration set one: a little under Slack's one post
// a second, with no burst, so that the milliseconds between a booking and
// its arrival cannot bring two calls to a channel within one second.
var slackChannelDefault = flow.Limit{Target: flow.KindDefault(flow.KindSlackChannel),
	Rate: flow.Rate{N: 50, Per: time.Minute}, Burst: 1}

// storeLimits seeds the configured limits: each is stored unless its
// target's limit was set by an operator (agentctl limit set), which stands,
// the difference logged; replacing a different limit of a config file
// (another daemon's, or this one before an edit) is logged too. Then the
// defaults agentd keeps where no limit is set: with Slack, the pace of
// every channel.
func storeLimits(ctx context.Context, db flow.DB, cfg *Config, log *slog.Logger) error {
	store := flow.NewStore(db)
	var targets []string
	ls, err := store.List(ctx)
	if err != nil {
		return err
	}
	before := make(map[string]flow.Limit, len(ls)) // read for the log only: a race with another start misleads only the log
	for _, l := range ls {
		before[l.Target] = l
		// Stored before such a limit was refused: it never applied.
		if err := flow.CheckPaced(l.Target); err != nil {
			log.Warn("a stored limit paces nothing: "+err.Error()+"; remove it (agentctl limit rm "+l.Target+
				") and set it on the channel's ID", "target", l.Target)
		}
	}
	for _, l := range cfg.Policy.Limits {
		got, stored, err := store.PutConfig(ctx, l)
		if err != nil {
			return &ConfigError{fmt.Errorf("limit of %q: %w", l.Target, err)}
		}
		if stored {
			targets = append(targets, got.Target)
			if was, ok := before[got.Target]; ok && was.Source == flow.SourceConfig && describeLimit(was) != describeLimit(got) {
				log.Info("the configuration's limit replaced a different one a config file stored (another daemon's file, or this one before an edit)",
					"target", got.Target, "set_at", was.UpdatedAt, "config", describeLimit(got), "was", describeLimit(was))
			}
			continue
		}
		if want := describeLimit(l); want != describeLimit(got) {
			log.Warn("the configuration's limit differs from the one an operator set; the operator's stays in force "+
				"(after agentctl limit rm "+got.Target+", the next start of a daemon with this file stores the configuration's)",
				"target", got.Target, "set_at", got.UpdatedAt, "config", want, "in_force", describeLimit(got))
		}
	}
	if len(targets) > 0 {
		log.Info("limits stored from the configuration", "targets", targets)
	}
	if (cfg.Notify.SlackToken != "" || cfg.Notify.SlackTokenFile != "") && !cfg.Notify.NoDispatch {
		stored, err := store.PutDefault(ctx, slackChannelDefault)
		if err != nil {
			return err
		}
		if stored {
			log.Info("stored the default pace of Slack channels, for every daemon (agentctl limit set changes it)",
				"target", slackChannelDefault.Target, "rate", slackChannelDefault.Rate.String())
		}
	}
	return nil
}

// describeLimit spells a limit's parts for the log: "rate 60/min burst 5,
// concurrency 5, tokens 90000/min, breaker 5 in 60s, cool-down 30s".
func describeLimit(l flow.Limit) string {
	s := ""
	add := func(part string) {
		if s != "" {
			s += ", "
		}
		s += part
	}
	if !l.Rate.IsZero() {
		add(fmt.Sprintf("rate %s burst %d", l.Rate, max(l.Burst, 1)))
	}
	if l.Concurrency > 0 {
		add(fmt.Sprintf("concurrency %d", l.Concurrency))
	}
	if !l.Tokens.IsZero() {
		add("tokens " + l.Tokens.String())
	}
	if l.Breaker != nil {
		add("breaker " + l.Breaker.String())
	}
	return s
}
