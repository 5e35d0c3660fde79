package flow

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/agentledger/agentledger"
)

// Where a limit came from.
const (
	SourceOperator = "operator" // agentctl limit set
	SourceConfig   = "config"   // agentd's [[limit]] tables, stored at start
	SourceDefault  = "default"  // agentd's own, stored where no limit of that target is
)

// Bounds of the parts of a limit.
const (
	MaxConcurrency   = 100_000
	MaxBreakerWindow = 24 * time.Hour
)

// Limit is what holds the calls to one target (or, for a kind's default,
// to each target of the kind without its own): a rate with a burst, a cap
// on the calls in flight across the fleet, a token rate (model endpoints)
// and a circuit breaker, each optional, at least one set.
type Limit struct {
	Target string `json:"target"`
	// Rate paces the calls; zero: not paced.
	Rate  Rate `json:"rate,omitzero"`
	Burst int  `json:"burst,omitempty"`
	// Concurrency caps the calls in flight across every daemon; 0: no cap.
	Concurrency int `json:"concurrency,omitempty"`
	// Tokens paces a model endpoint's tokens (prompt and completion); zero:
	// not paced.
	Tokens Rate `json:"tokens,omitzero"`
	// Breaker, when set, stops calls to the target while it fails.
	Breaker *Breaker `json:"breaker,omitempty"`

	Source    string    `json:"source"`
	UpdatedAt time.Time `json:"updated_at"`
}

// Breaker is a target's circuit breaker: Failures failed calls within
// Window open it for every daemon; after Cooldown one call probes, and
// its outcome closes the breaker or opens it again.
type Breaker struct {
	Failures int           `json:"failures"`
	Window   time.Duration `json:"window"`
	Cooldown time.Duration `json:"cooldown"`
}

// String spells the breaker as operators read it: "5 in 60s, cool-down 30s".
func (b Breaker) String() string {
	return fmt.Sprintf("%d in %s, cool-down %s", b.Failures, Span(b.Window), Span(b.Cooldown))
}

// Span writes a duration short: 60s, 90s, 5m, 1h30m, 1.5s, 250ms.
func Span(d time.Duration) string {
	if d < 2*time.Minute && d >= time.Second && d%time.Second == 0 {
		return fmt.Sprintf("%ds", d/time.Second)
	}
	return agentledger.DurationText(d)
}

// breakerJSON is a Breaker as JSON: durations as Go writes them ("1m0s").
type breakerJSON struct {
	Failures int    `json:"failures"`
	Window   string `json:"window"`
	Cooldown string `json:"cooldown"`
}

// MarshalJSON writes the window and cool-down as durations ("1m0s").
func (b Breaker) MarshalJSON() ([]byte, error) {
	return json.Marshal(breakerJSON{b.Failures, b.Window.String(), b.Cooldown.String()})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (b *Breaker) UnmarshalJSON(data []byte) error {
	var j breakerJSON
	if err := json.Unmarshal(data, &j); err != nil {
		return err
	}
	w, err := time.ParseDuration(j.Window)
	if err != nil {
		return agentledger.Invalid("breaker", "window: %v", err)
	}
	c, err := time.ParseDuration(j.Cooldown)
	if err != nil {
		return agentledger.Invalid("breaker", "cooldown: %v", err)
	}
	*b = Breaker{Failures: j.Failures, Window: w, Cooldown: c}
	return nil
}

// Check normalises l.Target and checks the limit; a zero Burst of a rate
// is 1 and a zero Source SourceOperator. Errors name the field at fault:
// "target", "rate", "burst", "concurrency", "tokens", "breaker" or
// "source".
func (l *Limit) Check() error {
	t, kind, err := ParseTarget(l.Target)
	if err != nil {
		return err
	}
	if err := checkLimited(t, kind); err != nil {
		return err
	}
	l.Target = t
	if l.Rate.IsZero() && l.Concurrency == 0 && l.Tokens.IsZero() && l.Breaker == nil {
		return agentledger.Invalid("rate", "a limit needs a rate, a concurrency cap, a token rate or a breaker")
	}
	if !l.Rate.IsZero() {
		if err := l.Rate.Validate(); err != nil {
			return err
		}
		if l.Burst == 0 {
			l.Burst = 1
		}
		if l.Burst < 1 || l.Burst > MaxN {
			return agentledger.Invalid("burst", "%d must be 1..%d", l.Burst, MaxN)
		}
	} else if l.Burst > 1 {
		return agentledger.Invalid("burst", "a burst needs a rate")
	} else {
		l.Burst = 0
	}
	if (kind == KindSlackChannel || kind == KindSlackWorkspace) && (l.Concurrency != 0 || l.Breaker != nil) {
		field := "concurrency"
		if l.Breaker != nil {
			field = "breaker"
		}
		return agentledger.Invalid(field, "Slack targets take a rate only: the notification outbox paces and retries its calls")
	}
	if l.Concurrency < 0 || l.Concurrency > MaxConcurrency {
		return agentledger.Invalid("concurrency", "%d must be 1..%d calls in flight", l.Concurrency, MaxConcurrency)
	}
	if !l.Tokens.IsZero() {
		if kind != KindModel {
			return agentledger.Invalid("tokens", "a token rate is for model endpoints (model:HOST), not %s", l.Target)
		}
		if err := l.Tokens.validate("tokens"); err != nil {
			return err
		}
	}
	if b := l.Breaker; b != nil {
		switch {
		case b.Failures < 1 || b.Failures > MaxN:
			return agentledger.Invalid("breaker", "failures %d must be 1..%d", b.Failures, MaxN)
		case b.Window < time.Millisecond || b.Window > MaxBreakerWindow:
			return agentledger.Invalid("breaker", "window %s must be 1ms..%s", b.Window, MaxBreakerWindow)
		case b.Cooldown < time.Millisecond || b.Cooldown > MaxBreakerWindow:
			return agentledger.Invalid("breaker", "cooldown %s must be 1ms..%s", b.Cooldown, MaxBreakerWindow)
		}
	}
	if l.Source == "" {
		l.Source = SourceOperator
	}
	if l.Source != SourceOperator && l.Source != SourceConfig && l.Source != SourceDefault {
		return agentledger.Invalid("source", "%q is not %s, %s or %s", l.Source, SourceOperator, SourceConfig, SourceDefault)
	}
	return nil
}

// tolerance is how far ahead of now a target's theoretical arrival time
// may be and a call still pass: the burst beyond the first call.
func (l *Limit) tolerance() time.Duration {
	return time.Duration(l.Burst-1) * l.Rate.Emission()
}
