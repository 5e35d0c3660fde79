// Package tools holds the tools that steps tasks and agents call, and the
// built-in task kinds. A Tool turns a call (task, step path, JSON arguments)
// into a ledger.Effect; Invoke runs it through the ledger, so every tool
// effect is performed at most once per deterministic key. Tools see the
// ledger's interfaces, never a database driver.
//
// Define declares a tool of one's own from a Spec: its name, its effect
// class, and a Go argument type whose JSON Schema it generates (arguments
// that do not fit are refused before anything is performed). Register it
// with daemon.RegisterTool.
package tools
