package tui

import (
	"strings"
	"testing"

	"github.com/agentledger/agentledger"
)

// parseWords reads Filter.String's key=value words back into a filter.
func parseWords(t *testing.T, s string) Filter {
	t.Helper()
	var f Filter
	for _, w := range strings.Fields(s) {
		k, v, ok := strings.Cut(w, "=")
		if !ok {
			t.Fatalf("%q: word %q is not key=value", s, w)
		}
		switch k {
		case "state":
			f.State = agentledger.TaskState(v)
		case "queue":
			f.Queue = v
		case "kind":
			f.Kind = v
		case "tenant":
			f.Tenant = v
		default:
			t.Fatalf("%q: unknown key %q", s, k)
		}
	}
	return f
}

// FuzzFilterForm puts any filter into the console's filter form and reads
// it back, as the form does when it is applied. It never panics, rendered
// at any width; a valid filter reads back as it was (its values trimmed),
// and its words (Filter.String) read back to it too; a refused one says
// which field is wrong.
func FuzzFilterForm(f *testing.F) {
	f.Add("", "", "", "", 80)
	f.Add("queued", "default", "steps", "acme", 160)
	f.Add("needs_attention", "billing", "agent", "", 20)
	f.Add("deed", "", "", "", 100)
	f.Add("", "bill ing", "", "", 0)
	f.Add("attention", "", "", "", -5)
	f.Add(" running ", "a.b_c:d-e", strings.Repeat("k", 128), "t", 40)
	f.Add("", "", strings.Repeat("k", 129), "", 40)
	f.Add("", "q=x", "k\x00", "ténant", 3)
	e := &env{keys: DefaultKeyMap(), styles: DefaultStyles(), opts: Options{}.withDefaults()}
	f.Fuzz(func(t *testing.T, state, queue, kind, tenant string, width int) {
		in := Filter{State: agentledger.TaskState(state), Queue: queue, Kind: kind, Tenant: tenant}
		m := newFilterForm(e, in, [fields][]string{{"queued"}, {queue}, {kind}, {tenant}})
		m.setWidth(width % 1000)
		_ = m.View()
		got, err := m.filter()
		trimmed := Filter{State: agentledger.TaskState(strings.TrimSpace(state)), Queue: strings.TrimSpace(queue),
			Kind: strings.TrimSpace(kind), Tenant: strings.TrimSpace(tenant)}
		if trimmed.validate() == nil && (err != nil || got != trimmed) {
			t.Fatalf("valid filter %+v read back as %+v, %v", trimmed, got, err)
		}
		if err != nil {
			msg := err.Error()
			if !strings.HasPrefix(msg, "unknown state ") && !strings.HasPrefix(msg, "queue ") &&
				!strings.HasPrefix(msg, "kind ") && !strings.HasPrefix(msg, "tenant ") {
				t.Fatalf("%+v: error %q does not name the field", in, msg)
			}
			m.err = err
			_ = m.View()
			return
		}
		if back := parseWords(t, got.String()); back != got {
			t.Fatalf("%+v: String %q reads back as %+v", got, got.String(), back)
		}
		if (got.String() == "") != (got == Filter{}) {
			t.Fatalf("%+v: String %q", got, got.String())
		}
	})
}
