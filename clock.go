package agentledger

import "time"

// Clock is a store's clock for the time it writes: nil means the
// database's now(); tests pin it.
type Clock func() time.Time

// Param is the clock as a statement parameter: nil, which the statements
// turn into now() (coalesce($n::timestamptz, now())), unless it is pinned.
func (c Clock) Param() *time.Time {
	if c == nil {
		return nil
	}
	t := c()
	return &t
}
