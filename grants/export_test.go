package grants

import "time"

// SetClock makes c read the time from now.
func (c *Cache) SetClock(now func() time.Time) { c.now = now }
