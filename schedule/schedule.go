package schedule

import (
	"encoding/json"
	"regexp"
	"strings"
	"time"
	_ "time/tzdata" // every daemon knows every zone, whatever its host has installed

	"github.com/robfig/cron/v3"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/claims"
)

// Missed is what a schedule does about slots it missed (see the package
// documentation).
type Missed string

// The missed-slot policies.
const (
	// MissedSkip fires no missed slot.
	MissedSkip Missed = "skip"
	// MissedRunOnce fires one catch-up task for the most recent missed slot.
	MissedRunOnce Missed = "run-once"
)

// Defaults applied by Validate to zero fields.
const (
	DefaultTimezone = "UTC"
	DefaultMissed   = MissedSkip
)

// Schedule is one durable cron schedule: every slot of Spec in Timezone
// enqueues one task of Kind with Payload on Queue for Tenant.
type Schedule struct {
	Name string
	// Tenant, Queue, Kind, Payload, Priority and MaxAttempts are the
	// task's, with claims.EnqueueParams' defaults and rules.
	Tenant string
	// Spec is a cron spec: five fields (minute hour day-of-month month
	// day-of-week), six with seconds first, or a descriptor (@hourly,
	// @daily, @weekly, @monthly, @yearly, @every 90s).
	Spec string
	// Timezone is the IANA zone Spec is read in ("UTC" when empty).
	Timezone    string
	Queue       string
	Kind        string
	Payload     json.RawMessage
	Priority    int16
	MaxAttempts int32
	// Missed is the policy for missed slots (skip when empty).
	Missed Missed
	// Paused schedules fire nothing and have no NextFireAt.
	Paused bool

	// NextFireAt is the next slot not yet fired; nil when paused or when
	// Spec has no slot left.
	NextFireAt *time.Time
	// LastFireAt is the slot of the latest task the schedule enqueued.
	LastFireAt *time.Time
	CreatedAt  time.Time
	UpdatedAt  time.Time
}

// parser reads 5-field specs, 6-field specs with seconds first, and
// descriptors.
var parser = cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

var nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]{0,62}$`)

// Validate fills defaults and checks s before it is stored; the error
// names the bad field and matches agentledger.ErrInvalid.
func (s *Schedule) Validate() error {
	if s.Timezone == "" {
		s.Timezone = DefaultTimezone
	}
	if s.Missed == "" {
		s.Missed = DefaultMissed
	}
	if !nameRE.MatchString(s.Name) {
		return agentledger.Invalid("name", "%q must be 1-63 characters of a-z, 0-9, '_', '.', '-', starting with a letter or digit", s.Name)
	}
	c, err := s.compile()
	if err != nil {
		return err
	}
	if c.next(time.Now()).IsZero() {
		if _, every := c.sched.(cron.ConstantDelaySchedule); every {
			return agentledger.Invalid("spec", "%q has no slot in the next five years: an @every interval may be at most five years", s.Spec)
		}
		return agentledger.Invalid("spec", "%q never fires: no slot in the next five years", s.Spec)
	}
	if s.Missed != MissedSkip && s.Missed != MissedRunOnce {
		return agentledger.Invalid("missed", "%q is neither %s nor %s", s.Missed, MissedSkip, MissedRunOnce)
	}
	p := s.params("")
	if err := p.Validate(); err != nil {
		return err
	}
	s.Tenant, s.Queue, s.Payload, s.MaxAttempts = p.Tenant, p.Queue, p.Payload, p.MaxAttempts
	return nil
}

// Next returns the first slot of the schedule strictly after t, in the
// schedule's time zone; the zero time if there is none in the five years
// after t. The slots of an @every spec are the ones that follow
// NextFireAt; Next(t) counts the interval from t.
func (s *Schedule) Next(t time.Time) (time.Time, error) {
	c, err := s.compile()
	if err != nil {
		return time.Time{}, err
	}
	return c.next(t), nil
}

// compiled is a schedule's spec, parsed, in its zone.
type compiled struct {
	sched cron.Schedule
	loc   *time.Location
}

// horizonYears is how far after t next looks for a slot. robfig/cron
// gives up on a calendar spec a few years on; an @every interval would
// have its slot however far away: next holds both to the same five years.
const horizonYears = 5

// next is the first slot strictly after t; the zero time if there is none
// in the five years after t.
func (c compiled) next(t time.Time) time.Time {
	t = t.In(c.loc)
	n := c.sched.Next(t)
	if n.After(t.AddDate(horizonYears, 0, 0)) {
		return time.Time{}
	}
	return n
}

// compile parses the spec and loads the time zone.
func (s *Schedule) compile() (compiled, error) {
	spec := strings.TrimSpace(s.Spec)
	switch {
	case spec == "":
		return compiled{}, agentledger.Invalid("spec", "is required: five fields (minute hour day-of-month month day-of-week), six with seconds first, or @hourly, @daily, @every 10m")
	// The zone is the schedule's own field; robfig's parser also panics
	// on a zone prefix without a spec after it.
	case strings.HasPrefix(spec, "TZ=") || strings.HasPrefix(spec, "CRON_TZ="):
		return compiled{}, agentledger.Invalid("spec", "%q names a time zone: give the spec without it and set the schedule's timezone", s.Spec)
	}
	sched, err := parser.Parse(spec)
	if err != nil {
		return compiled{}, agentledger.Invalid("spec", "%q is not a cron spec (%s): use five fields (minute hour day-of-month month day-of-week), six with seconds first, or @hourly, @daily, @every 10m", s.Spec, cronProblem(err))
	}
	// robfig's @every rounds down to whole seconds, and anything under a
	// second (0s and negative ones included) to one: "@every 0s" would
	// fire every second.
	if every, ok := strings.CutPrefix(spec, "@every "); ok {
		if d, err := time.ParseDuration(strings.TrimSpace(every)); err == nil && (d < time.Second || d%time.Second != 0) {
			return compiled{}, agentledger.Invalid("spec", "%q: @every takes whole seconds, at least 1s (such as @every 90s or @every 10m)", s.Spec)
		}
	}
	tz := s.Timezone
	if tz == "" {
		tz = DefaultTimezone
	}
	// "Local" would read the spec in each daemon's own zone.
	if tz == "Local" {
		return compiled{}, agentledger.Invalid("timezone", "%q differs from host to host: name an IANA zone such as Europe/Paris, or UTC", tz)
	}
	loc, err := time.LoadLocation(tz)
	if err != nil {
		return compiled{}, agentledger.Invalid("timezone", "%q is not a time zone: name an IANA zone such as Europe/Paris, or UTC", tz)
	}
	return compiled{sched: sched, loc: loc}, nil
}

// Task is the task each slot of the schedule enqueues, less its
// submission key.
func (s *Schedule) Task() claims.EnqueueParams { return s.params("") }

// params is the task the schedule enqueues for slot key.
func (s *Schedule) params(key string) claims.EnqueueParams {
	return claims.EnqueueParams{Tenant: s.Tenant, Queue: s.Queue, Kind: s.Kind, Payload: s.Payload,
		Priority: s.Priority, MaxAttempts: s.MaxAttempts, SubmissionKey: key}
}

// Key is the submission key of the schedule's task for slot:
// cron:<name>:<slot in RFC 3339, UTC>. It makes each slot one task,
// whichever daemons fire it.
func Key(name string, slot time.Time) string {
	return "cron:" + name + ":" + slot.UTC().Format(time.RFC3339)
}

// cronProblem is the cron parser's error without the Go parsing beneath
// it: "failed to parse int from *x", not "…: strconv.Atoi: parsing \"*x\":
// invalid syntax".
func cronProblem(err error) string {
	msg := err.Error()
	if i := strings.Index(msg, ": strconv."); i >= 0 {
		msg = msg[:i]
	}
	return msg
}
