// Package tools holds the built-in task kinds and, later, the tools that
// steps and agents call. Each is a plain function with the worker.Handler
// signature so that agentd decides which kinds it serves.
package tools
