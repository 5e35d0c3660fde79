// Package admit is the one door into the tasks table: every entrance —
// the HTTP API, agentctl submit, client.Database, webhooks, cron and
// create_task — has its task admitted by a Door before it is queued, and
// the entrances differ only in who the caller is (Caller: a tenant, the
// operator, a webhook source, a schedule, a parent task). The rules are
// written once here; the caller table (caller.go) says which apply.
//
// For every caller: claims' limits (claims.EnqueueParams.Validate: names,
// sizes, encoding, priority 0–100, the submission key), the payload of a
// typed kind (in full where the daemon serves it, otherwise against the
// schema its daemon published in the kinds table), and a steps payload's
// structure — a task that fails them would fail when it runs.
//
// For a tenant and a parent task: the tenant's grant decides the kind and
// whatever the payload names literally (steps.Needs, agent.Needs; a tool,
// host, channel, child kind or model, and what a literal child's payload
// names, a few generations deep), and the task keeps to the grant's
// priority floor with a run_at in the past made now. A model is refused
// only when that is certain: the daemon's configured model is taken as its
// workers', and without one only a model no configuration could make
// granted is refused. What only the run knows is checked when it runs.
//
// For a tenant and the operator at agentctl: a live worker pool (one that
// announced itself lately, registry.LiveWithin) must serve the kind on its
// queue, and a steps task's tools and arguments must fit what those pools
// announced — unless the submission asks for the task to be queued for a
// worker not up yet (Submission.Unserved). The machine entrances (cron,
// webhooks, parents, and client.Database, which always submits Unserved)
// do not check it: a slot, a delivery or a child must not be lost because
// no worker is live at that moment.
//
// A signal (package waits) is an input like a task, and comes in through
// the same door (Door.Signal) from the API (a tenant, for itself), agentctl
// signal and client.Database (the operator, for any tenant) and a webhook
// source mapped to signals (for its own tenant): the signal caller table
// (signal.go) says which rules apply.
//
// The door takes the caller's database handle, so the webhook inbox and
// create_task admit and queue inside their own transactions. tools cannot
// import this package (it imports tools, steps and agent), so create_task
// reaches the door through tools.ChildDoor, which the daemon sets.
package admit
