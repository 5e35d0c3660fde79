package pgbouncerconf

import "testing"

func TestValue(t *testing.T) {
	for in, want := range map[string]string{
		"localhost":      "localhost",
		"":               "''",
		"a b":            "'a b'",
		`it's`:           `'it\'s'`,
		`back\slash`:     `'back\\slash'`,
		"SET x = 'on'":   `'SET x = \'on\''`,
		"p@ss:w0rd/only": "p@ss:w0rd/only",
	} {
		if got := Value(in); got != want {
			t.Errorf("Value(%q) = %s, want %s", in, got, want)
		}
	}
}
