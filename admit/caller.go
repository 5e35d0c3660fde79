package admit

import "fmt"

// Caller is who submits a task through the door. The caller, not the
// entrance's code, decides which of the door's rules apply (callers, the caller table).
type Caller int

const (
	// Tenant submits through the HTTP API, under its token.
	Tenant Caller = iota + 1
	// Operator submits with agentctl submit or client.Database.
	Operator
	// Webhook is a signed source's delivery (package webhooks).
	Webhook
	// Schedule is a cron schedule firing (package schedule).
	Schedule
	// Parent is a running task queuing a child (the create_task tool).
	Parent
)

// A signal (Door.Signal) is an input like a task, and its callers are the
// same: who sends it (a tenant, the operator, a webhook source) decides
// its rules, in the signal caller table (signalCallers in signal.go). A
// wait's wake-up is no caller: it changes a task already admitted.

func (c Caller) String() string {
	switch c {
	case Tenant:
		return "tenant"
	case Operator:
		return "operator"
	case Webhook:
		return "webhook"
	case Schedule:
		return "schedule"
	case Parent:
		return "parent"
	}
	return fmt.Sprintf("caller(%d)", int(c))
}

// rules say which of the door's checks apply to a caller. The checks of
// the task itself — claims' limits (EnqueueParams.Validate), its typed
// kind or published schema, a steps payload's structure — apply to every
// caller: a task that fails them would fail when it runs.
type rules struct {
	// served: a live worker must serve the kind on its queue (and a steps
	// task's tools and arguments must fit what it announced) unless the
	// submission says Unserved. The machine entrances do not check it:
	// their writers own their kinds, and a cron slot, a delivery or a
	// child must not be lost because no worker is live at that moment.
	served bool
	// grant: the tenant's grant decides the kind and what the payload
	// names literally.
	grant bool
	// bound: no queue jumping — the grant's priority floor, and a run_at
	// in the past becomes now.
	bound bool
}

// The caller table, for tasks. client.Database is an Operator that always submits
// Unserved (a program writing its own tasks, often before any daemon is
// up); agentctl submits Unserved only with --allow-unserved, the API
// only with "allow_unserved": true.
var callers = map[Caller]rules{
	Tenant:   {served: true, grant: true, bound: true},
	Operator: {served: true},
	Webhook:  {},
	Schedule: {},
	Parent:   {grant: true, bound: true},
}
