// Package downstream is a counting HTTP server for tests: a stand-in for a
// business API that honours Idempotency-Key. It counts raw hits separately
// from business effects, so tests can tell a harmless keyed re-send from a
// duplicated effect, and it can be told to fail or to commit an effect and
// then drop the connection before answering, or to refuse some requests
// (a business rule's 422) without an effect. A hook (SetAfter) can hold an
// effect's answer back, so a drill can kill the caller between the effect
// and its record.
package downstream

import (
	"cmp"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Server is a running counting server. Its zero value is not usable: call
// New.
type Server struct {
	*httptest.Server

	hits    atomic.Int64
	mu      sync.Mutex
	effects map[string]*effect // by Idempotency-Key
	// counted holds the keyed effects performed after CountOnly, by the
	// key's SHA-256: no pointers, so a collector never walks them.
	counted   map[[32]byte]counted
	countOnly bool
	unkeyed   int64 // business effects without a key
	faults    []Fault
	delay     func() time.Duration // how long a request takes, or nil
	refuse    func(path string, body []byte) bool
	refused   atomic.Int64
	after     func(path, key string, body []byte)

	inFlight, mostInFlight atomic.Int64
	down                   atomic.Bool  // every request answers 503
	downHits               atomic.Int64 // requests while down
}

type effect struct {
	bodyHash [32]byte
	path     string
	body     []byte
	n        int64 // business effect number
}

// counted is a keyed effect kept for counting only.
type counted struct {
	bodyHash [32]byte
	n        int64
}

// Record is one keyed business effect.
type Record struct {
	Key  string // its Idempotency-Key
	Path string
	Body []byte
	// N numbers the effects in the order they were performed; the
	// response's id is "eff_<N>".
	N int64
}

// Fault is a scripted misbehaviour for the next matching request.
type Fault int

// The faults.
const (
	// Unavailable answers 503 without doing anything.
	Unavailable Fault = iota + 1
	// CommitThenDrop performs the business effect, then closes the
	// connection without answering: the caller cannot know it happened.
	CommitThenDrop
	// RateLimited answers 429 with Retry-After: 1.
	RateLimited
)

// New starts a server; Close it when done.
func New() *Server {
	s := &Server{effects: map[string]*effect{}}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

// CountOnly makes the server keep, of each keyed effect performed from
// now on, only what counting needs (its key's and body's hashes and its
// number), not its path and body: a run of millions of effects keeps tens
// of bytes each, where a test's few keep everything. Effects, EffectsFor
// and EffectsByBody count them; Records lists only the effects kept whole.
func (s *Server) CountOnly() {
	s.mu.Lock()
	s.countOnly = true
	s.mu.Unlock()
}

// Inject queues faults for the next requests, in order.
func (s *Server) Inject(f ...Fault) {
	s.mu.Lock()
	s.faults = append(s.faults, f...)
	s.mu.Unlock()
}

// SetDelay makes every request take delay() before it is handled, as a
// real API does: work stays in flight long enough for a drill to hit it.
func (s *Server) SetDelay(delay func() time.Duration) {
	s.mu.Lock()
	s.delay = delay
	s.mu.Unlock()
}

// SetRefuse makes the server answer 422, with no effect, every request
// for which refuse holds: a business rule the caller cannot retry past.
func (s *Server) SetRefuse(refuse func(path string, body []byte) bool) {
	s.mu.Lock()
	s.refuse = refuse
	s.mu.Unlock()
}

// SetAfter makes the server call after once a request's effect is
// recorded — performed now, or replayed under its Idempotency-Key (key, ""
// for none) — and before the answer is written. after may block: the
// caller then waits for an answer to an effect that has happened.
func (s *Server) SetAfter(after func(path, key string, body []byte)) {
	s.mu.Lock()
	s.after = after
	s.mu.Unlock()
}

// Refused is the number of requests answered 422 by the SetRefuse rule.
func (s *Server) Refused() int64 { return s.refused.Load() }

// SetDown makes every request answer 503 (down) or be served (up), as a
// downstream in an outage does.
func (s *Server) SetDown(down bool) { s.down.Store(down) }

// DownHits is the number of requests received while down.
func (s *Server) DownHits() int64 { return s.downHits.Load() }

// MostInFlight is the most requests the server was handling at once.
func (s *Server) MostInFlight() int64 { return s.mostInFlight.Load() }

// Hits is the number of requests received.
func (s *Server) Hits() int64 { return s.hits.Load() }

// Effects is the number of business effects performed: one per distinct
// Idempotency-Key, plus one per request without a key.
func (s *Server) Effects() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.keyed() + s.unkeyed
}

// keyed is the number of keyed effects; it needs s.mu.
func (s *Server) keyed() int64 { return int64(len(s.effects) + len(s.counted)) }

// EffectsFor is how many business effects a key produced (0 or 1).
func (s *Server) EffectsFor(key string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.lookup(key); ok {
		return 1
	}
	return 0
}

// lookup finds the keyed effect of key, kept whole or counted; it needs
// s.mu.
func (s *Server) lookup(key string) (counted, bool) {
	if e, ok := s.effects[key]; ok {
		return counted{bodyHash: e.bodyHash, n: e.n}, true
	}
	c, ok := s.counted[sha256.Sum256([]byte(key))]
	return c, ok
}

// EffectsByBody counts the keyed business effects per request body
// (SHA-256): an intended effect performed under two keys counts 2.
func (s *Server) EffectsByBody() map[[32]byte]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[[32]byte]int{}
	for _, e := range s.effects {
		out[e.bodyHash]++
	}
	for _, c := range s.counted {
		out[c.bodyHash]++
	}
	return out
}

// Records lists the keyed business effects kept whole (all of them,
// unless CountOnly was called) in the order they were performed.
func (s *Server) Records() []Record {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Record, 0, len(s.effects))
	for k, e := range s.effects {
		out = append(out, Record{Key: k, Path: e.path, Body: e.body, N: e.n})
	}
	slices.SortFunc(out, func(a, b Record) int { return cmp.Compare(a.N, b.N) })
	return out
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.hits.Add(1)
	n := s.inFlight.Add(1)
	defer s.inFlight.Add(-1)
	for m := s.mostInFlight.Load(); n > m && !s.mostInFlight.CompareAndSwap(m, n); m = s.mostInFlight.Load() {
	}
	if s.down.Load() {
		s.downHits.Add(1)
		http.Error(w, "unavailable", http.StatusServiceUnavailable)
		return
	}
	s.mu.Lock()
	delay := s.delay
	s.mu.Unlock()
	if delay != nil {
		time.Sleep(delay()) // the API's own latency
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	var fault Fault
	if len(s.faults) > 0 {
		fault, s.faults = s.faults[0], s.faults[1:]
	}
	switch fault {
	case Unavailable:
		s.mu.Unlock()
		http.Error(w, "unavailable", http.StatusServiceUnavailable)
		return
	case RateLimited:
		s.mu.Unlock()
		w.Header().Set("Retry-After", "1")
		http.Error(w, "slow down", http.StatusTooManyRequests)
		return
	}
	key := r.Header.Get("Idempotency-Key")
	sum := sha256.Sum256(body)
	var resp []byte
	status := http.StatusCreated
	switch e, ok := s.lookup(key); {
	case s.refuse != nil && s.refuse(r.URL.Path, body):
		s.refused.Add(1)
		resp, status = []byte(`{"error":"refused by the business rule"}`), http.StatusUnprocessableEntity
	case key == "":
		s.unkeyed++
		resp = s.response(s.unkeyed, body)
	case ok && e.bodyHash != sum:
		s.mu.Unlock()
		http.Error(w, "Idempotency-Key reused with another body", http.StatusUnprocessableEntity)
		return
	case ok:
		// The same body as the first time: the same answer, built again.
		resp, status = s.response(e.n, body), http.StatusOK
		w.Header().Set("Idempotent-Replayed", "true")
	default:
		n := s.keyed() + s.unkeyed + 1
		resp = s.response(n, body)
		if s.countOnly {
			if s.counted == nil {
				s.counted = map[[32]byte]counted{}
			}
			s.counted[sha256.Sum256([]byte(key))] = counted{bodyHash: sum, n: n}
		} else {
			s.effects[key] = &effect{bodyHash: sum, path: r.URL.Path, body: body, n: n}
		}
	}
	after := s.after
	s.mu.Unlock()

	if after != nil && status != http.StatusUnprocessableEntity {
		after(r.URL.Path, key, body)
	}
	if fault == CommitThenDrop {
		if hj, ok := w.(http.Hijacker); ok {
			if conn, _, err := hj.Hijack(); err == nil {
				conn.Close()
				return
			}
		}
		panic(http.ErrAbortHandler)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(resp)
}

func (s *Server) response(n int64, body []byte) []byte {
	b, _ := json.Marshal(map[string]any{"effect": n, "id": fmt.Sprintf("eff_%d", n), "echo": json.RawMessage(orNull(body))})
	return b
}

func orNull(b []byte) []byte {
	if len(b) == 0 || !json.Valid(b) {
		return []byte("null")
	}
	return b
}
