// Package secretfmt prints values that hold secrets through their redacted
// descriptions only.
package secretfmt

import "fmt"

// Format writes s, or gos for %#v, whatever the verb: a type holding a
// secret implements fmt.Formatter with it so that no verb (%v, %+v, %s,
// %q, %x …) reaches its fields.
func Format(f fmt.State, verb rune, s, gos string) {
	if verb == 'v' && f.Flag('#') {
		s = gos
	}
	_, _ = f.Write([]byte(s))
}
