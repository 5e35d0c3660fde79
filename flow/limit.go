package flow

import (
	"time"

	"github.com/agentledger/agentledger"
)

// Where a limit came from.
const (
	SourceOperator = "operator" // agentctl limit set
	SourceConfig   = "config"   // agentd's [[limit]] tables, stored at start
	SourceDefault  = "default"  // agentd's own, stored where no limit of that target is
)

// Limit is the rate limit of one target or of a kind's default.
type Limit struct {
	Target    string    `json:"target"`
	Rate      Rate      `json:"rate"`
	Burst     int       `json:"burst"`
	Source    string    `json:"source"`
	UpdatedAt time.Time `json:"updated_at"`
}

// Check normalises l.Target and checks the limit; a zero Burst is 1 and a
// zero Source SourceOperator. Errors name the field at fault: "target",
// "rate", "burst" or "source".
func (l *Limit) Check() error {
	t, _, err := ParseTarget(l.Target)
	if err != nil {
		return err
	}
	l.Target = t
	if err := l.Rate.Validate(); err != nil {
		return err
	}
	if l.Burst == 0 {
		l.Burst = 1
	}
	if l.Burst < 1 || l.Burst > MaxN {
		return agentledger.Invalid("burst", "%d must be 1..%d", l.Burst, MaxN)
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
