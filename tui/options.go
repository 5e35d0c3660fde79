package tui

import "time"

// Defaults of Options.
const (
	DefaultPoll       = 1500 * time.Millisecond
	DefaultPageSize   = 100
	DefaultStaleAfter = 30 * time.Second
	DefaultStatusFor  = 5 * time.Second
	maxPageSize       = 1000
)

// Options tune the console. The zero value is the defaults.
type Options struct {
	// Poll is how often the visible view is reloaded; negative turns live
	// refresh off.
	Poll time.Duration
	// PageSize is how many tasks one page loads (1..1000).
	PageSize int
	// Filter is the filter the console starts with.
	Filter Filter
	// StaleAfter is the heartbeat age beyond which a worker is
	// highlighted as stale (one with expired leases always is).
	StaleAfter time.Duration
	// StatusFor is how long a status message (what an action did, or why
	// it was refused) stays on screen; the next key clears it sooner.
	// Negative keeps it until the next key.
	StatusFor time.Duration
	// Now is the clock behind every age shown; nil is time.Now.
	Now func() time.Time
	// Location is where instants are printed; nil is time.Local.
	Location *time.Location
}

func (o Options) withDefaults() Options {
	if o.Poll == 0 {
		o.Poll = DefaultPoll
	}
	if o.PageSize <= 0 {
		o.PageSize = DefaultPageSize
	}
	o.PageSize = min(o.PageSize, maxPageSize)
	if o.StaleAfter <= 0 {
		o.StaleAfter = DefaultStaleAfter
	}
	if o.StatusFor == 0 {
		o.StatusFor = DefaultStatusFor
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Location == nil {
		o.Location = time.Local
	}
	return o
}

// env is what every component shares: the keymap, the styles and the
// clock. It is built once per App and never changed.
type env struct {
	keys   KeyMap
	styles Styles
	opts   Options
}

func (e *env) now() time.Time { return e.opts.Now() }

// stamp prints t in the console's location.
func (e *env) stamp(t time.Time) string { return t.In(e.opts.Location).Format(stampLayout) }

// stampPtr is stamp for an optional instant; nil is "-".
func (e *env) stampPtr(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return e.stamp(*t)
}

// at prints t with how long ago (or how soon) it is.
func (e *env) at(t time.Time) string { return e.stamp(t) + " (" + relative(t, e.now()) + ")" }

// stampSince prints t, without its date when it is on the day of since.
func (e *env) stampSince(t, since time.Time) string {
	t, since = t.In(e.opts.Location), since.In(e.opts.Location)
	if t.Year() == since.Year() && t.YearDay() == since.YearDay() {
		return t.Format(time.TimeOnly)
	}
	return e.stamp(t)
}
