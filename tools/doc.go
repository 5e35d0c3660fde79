// Package tools holds the tools that steps tasks and agents call, and the
// built-in task kinds. A Tool turns a call (task, step path, JSON arguments)
// into a ledger.Effect; a Path runs it through the ledger, so every tool
// effect is performed at most once per deterministic key. Tools see the
// ledger's interfaces, never a database driver.
//
// Path is the one way out of a task for every kind: lookup, trace, grant,
// effect, the embedder's Interceptors, the ledger, chained once. An
// Interceptor may stop an effect and park its task (Park); Outgoing
// tells it what is about to happen and whether the ledger would serve it
// from its record. Invoke is a Path of one call.
//
// Define declares a tool of one's own from a Spec: its name, its effect
// class, and a Go argument type whose JSON Schema it generates (arguments
// that do not fit are refused before anything is performed). Register it
// with daemon.RegisterTool.
package tools
