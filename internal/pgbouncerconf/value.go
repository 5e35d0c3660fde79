// Package pgbouncerconf writes values into the connection strings of a
// pgbouncer.ini [databases] section, for the tools that start a PgBouncer
// of their own (the tests' and the benchmark's).
package pgbouncerconf

import "strings"

// Value quotes v for a PgBouncer connection string where it needs it: an
// empty value, or one holding a space, a quote or a backslash, goes in
// single quotes with the quote and the backslash escaped.
func Value(v string) string {
	if v != "" && !strings.ContainsAny(v, " '\\") {
		return v
	}
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(v) + "'"
}
