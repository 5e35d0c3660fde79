package downstream_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/agentledger/agentledger/agentledgertest/downstream"
)

func post(t *testing.T, s *downstream.Server, key, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, s.URL+"/charges", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestCountOnlyCountsAsKeptWhole: effects counted without their bodies
// are counted, replayed and refused as those kept whole are.
func TestCountOnlyCountsAsKeptWhole(t *testing.T) {
	s := downstream.New()
	defer s.Close()
	if code, _ := post(t, s, "k1", `{"n":1}`); code != http.StatusCreated {
		t.Fatalf("first effect: %d", code)
	}
	s.CountOnly()
	code, first := post(t, s, "k2", `{"n":2}`)
	if code != http.StatusCreated {
		t.Fatalf("counted effect: %d", code)
	}
	code, again := post(t, s, "k2", `{"n":2}`)
	if code != http.StatusOK || again != first {
		t.Fatalf("replay under k2: %d %q, want 200 and the first answer %q", code, again, first)
	}
	if code, _ := post(t, s, "k2", `{"n":3}`); code != http.StatusUnprocessableEntity {
		t.Fatalf("k2 with another body: %d, want 422", code)
	}
	if code, _ := post(t, s, "k1", `{"n":1}`); code != http.StatusOK {
		t.Fatalf("replay of the effect kept whole: %d", code)
	}
	post(t, s, "k3", `{"n":2}`) // the body of k2 under another key: a duplicate
	post(t, s, "", `{"n":4}`)

	if got := s.Effects(); got != 4 {
		t.Errorf("Effects = %d, want 4 (k1, k2, k3, one unkeyed)", got)
	}
	if s.EffectsFor("k2") != 1 || s.EffectsFor("k9") != 0 {
		t.Errorf("EffectsFor: k2 %d, k9 %d; want 1, 0", s.EffectsFor("k2"), s.EffectsFor("k9"))
	}
	dup := 0
	for _, n := range s.EffectsByBody() {
		if n > 1 {
			dup++
		}
	}
	if dup != 1 {
		t.Errorf("bodies performed twice: %d, want 1", dup)
	}
	if r := s.Records(); len(r) != 1 || r[0].Key != "k1" || r[0].N != 1 {
		t.Errorf("Records = %+v, want only k1, kept whole", r)
	}
}
