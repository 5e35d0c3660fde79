// Package tools holds the tools that steps tasks and agents call, and the
// built-in task kinds. A Tool turns a call (task, step path, JSON arguments)
// into a ledger.Effect; Invoke runs it through the ledger, so every tool
// effect is performed at most once per deterministic key. Tools see the
// ledger's interfaces, never a database driver.
package tools
