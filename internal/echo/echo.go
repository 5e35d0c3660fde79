// Package echo cuts a value taken from a request for an error that echoes
// it back: a leaf, so that the root package and the packages below it
// (canonjson) share one rule.
package echo

import (
	"fmt"
	"unicode/utf8"
)

// Cut is s whole up to 64 bytes; past that its first 64 bytes (on a rune
// boundary), an ellipsis and its length: a 900 KB name is not sent back.
func Cut(s string) string {
	const most = 64
	if len(s) <= most {
		return s
	}
	cut := most
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s… (%d bytes)", s[:cut], len(s))
}
