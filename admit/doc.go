// Package admit decides whether a submitted task may be queued, once for
// agentctl submit and the HTTP API: a task that no live worker pool would
// ever claim — its kind, or its kind on its queue, is served by none — is
// refused with what is served, instead of waiting forever; a steps
// payload is checked as it would be when it runs (its structure, its
// tools against the tools the live pools announced, and each step's
// arguments against its tool's schema as they announced it).
//
// Live pools are those that announced themselves lately (registry.LiveWithin).
// A submitter that expects a worker which is not up yet asks for the task
// to be queued anyway: only what needs no worker is checked then.
//
// Given the tenants' grants (the HTTP API), whatever a payload names
// literally must be granted, queued anyway or not (steps.Needs,
// agent.Needs): a tool, host, channel, child kind or model outside the
// grant is refused at submit, and so is one that the payload of a child it
// queues names, when a create_task call names the child's kind and
// payload literally (children of children too, a few generations deep).
// A model is refused only when that is certain: the daemon's configured
// model is taken as its workers', and without one only a model no
// configuration could make granted is refused. What only the run knows
// is checked when it runs.
package admit
