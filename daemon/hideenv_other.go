//go:build !linux

package daemon

// HideEnvironment does nothing outside Linux (see its Linux
// documentation: there it makes the process non-dumpable).
func HideEnvironment() error { return nil }
