package httpapi

import (
	"net/http"
	"strings"
	"testing"
)

// A route ServeMux refuses is an error, not a panic, and the error does
// not point into this package's source.
func TestTryHandleRefusesWithoutPanicking(t *testing.T) {
	mux := http.NewServeMux()
	if err := TryHandle(mux, "GET /a/{x}", http.NotFoundHandler()); err != nil {
		t.Fatal(err)
	}
	for pattern, want := range map[string]string{
		"GET /a/{y}": `pattern "GET /a/{y}" conflicts with pattern "GET /a/{x}"`,
		"GET /{x":    `parsing "GET /{x"`,
	} {
		err := TryHandle(mux, pattern, http.NotFoundHandler())
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "registered at") {
			t.Errorf("TryHandle(%q) = %v, want an error saying %q and not where", pattern, err, want)
		}
	}
}
