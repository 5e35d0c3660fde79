package worker_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/grants"
	"github.com/agentledger/agentledger/internal/test/testdb"
	"github.com/agentledger/agentledger/operator"
	"github.com/agentledger/agentledger/worker"
)

// The liveness bound in these tests: a quiet session is pinged after
// testIdle, and dropped if the ping is not answered within testPing.
const (
	testIdle  = 50 * time.Millisecond
	testPing  = 300 * time.Millisecond
	testSetup = time.Second
)

func echoHandlers() map[string]worker.Handler {
	return map[string]worker.Handler{"echo": worker.HandlerFunc(func(context.Context, *agentledger.Task) (json.RawMessage, error) {
		return json.RawMessage(`{}`), nil
	})}
}

// await returns the next value on ch, failing after 30s.
func await[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(30 * time.Second):
		t.Fatalf("no %s within 30s", what)
		panic("unreachable")
	}
}

func wantListening(t *testing.T, ups <-chan bool, want bool) {
	t.Helper()
	if got := await(t, ups, fmt.Sprintf("Listening(%v)", want)); got != want {
		t.Fatalf("Listening(%v), want Listening(%v)", got, want)
	}
}

// A LISTEN session whose connection goes silent without an error (a
// half-open connection) is noticed by its ping: Listening(false) at once,
// the dead connection closed, and Listening(true) again once a new session
// is subscribed.
func TestListenDropsASilentSession(t *testing.T) {
	t.Parallel()
	url := testdb.URL(t)
	db := testdb.Open(t, url)
	proxy := newBlackHole(t, url)
	ups := make(chan bool, 100)
	cfg := worker.Config{Handlers: echoHandlers(), Listening: func(up bool) { ups <- up }}
	worker.SetListenHooks(&cfg, testIdle, testPing, testSetup, proxy.connect)
	runPool(t, db, cfg)
	if id := await(t, proxy.started, "session"); id != 0 {
		t.Fatalf("session on connection %d, want 0", id)
	}
	wantListening(t, ups, true)

	proxy.hole(true)
	wantListening(t, ups, false)
	if id := await(t, proxy.closed, "close of the dead connection"); id != 0 {
		t.Fatalf("connection %d closed first, want the dead session's (0)", id)
	}
	// A reconnect through the same dead path must give up and try again,
	// not hang: the path is mended only once one has begun.
	await(t, proxy.started, "reconnect")
	proxy.hole(false)
	wantListening(t, ups, true)
}

// While pings go out, a session that answers them stays up, and a
// notification that arrives while a ping waits for its answer is handed
// over after it, in order.
func TestListenPingKeepsNotifications(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := testdb.URL(t)
	db := testdb.Open(t, url)
	proxy := newBlackHole(t, url)
	ups := make(chan bool, 100)
	heard := make(chan string, 100)
	cfg := worker.Config{Handlers: echoHandlers(), Listening: func(up bool) { ups <- up },
		Channels: map[string]func(string){"liveness_test": func(p string) { heard <- p }}}
	// The ping's deadline is long: this test holds a ping's answer back.
	worker.SetListenHooks(&cfg, testIdle, time.Minute, testSetup, proxy.connect)
	runPool(t, db, cfg)
	wantListening(t, ups, true)

	release := proxy.holdClients()
	defer release()
	if id := await(t, proxy.heldUp, "ping"); id != 0 {
		t.Fatalf("connection %d sent, want the session's (0)", id)
	}
	// The ping is on its way; notifications reach the client before its
	// answer can (the answer waits for the ping to reach the server).
	before := proxy.down.Load()
	var want []string
	var size int64
	for i := range 20 {
		p := fmt.Sprint("n", i)
		want = append(want, p)
		size += int64(1 + 4 + 4 + len("liveness_test") + 1 + len(p) + 1) // NotificationResponse
		if _, err := db.Exec(ctx, `SELECT pg_notify('liveness_test', $1)`, p); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for proxy.down.Load() < before+size {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d bytes of notifications reached the session in 30s", proxy.down.Load()-before, size)
		}
		time.Sleep(time.Millisecond) // polling a condition, not ordering events
	}
	release()
	var got []string
	for range want {
		got = append(got, await(t, heard, "notification"))
	}
	if !slices.Equal(got, want) {
		t.Fatalf("heard %v, want %v", got, want)
	}
	select {
	case up := <-ups:
		t.Fatalf("Listening(%v) while the session answered its pings", up)
	default:
	}
}

// A grant revoked while the grants cache's session is silently dead is
// seen within the liveness bound: the cache reads through once the ping
// goes unanswered, and serves from memory again once a new session is up.
func TestGrantRevokeSeenThroughASilentSession(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := testdb.URL(t)
	db := testdb.Open(t, url)
	proxy := newBlackHole(t, url)
	store := grants.NewStore(db)
	cache := grants.NewCache(store)
	ups := make(chan bool, 100)
	cfg := worker.Config{Handlers: echoHandlers(),
		Channels:  map[string]func(string){grants.Channel: cache.Changed},
		Listening: func(up bool) { cache.Listening(up); ups <- up }}
	worker.SetListenHooks(&cfg, testIdle, testPing, testSetup, proxy.connect)
	put := func(tools ...string) {
		t.Helper()
		if err := store.Put(ctx, "acme", &grants.Grant{Tools: tools}); err != nil {
			t.Fatal(err)
		}
	}
	// waitTools waits until the cache gives acme tools (polling a
	// condition: the cache is what is tested).
	waitTools := func(what string, tools ...string) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			g, err := cache.For(ctx, "acme")
			if err != nil {
				t.Fatal(err)
			}
			if slices.Equal(g.Tools, tools) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: the cache gives %v after 30s, want %v", what, g.Tools, tools)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	put("shop/charge")
	runPool(t, db, cfg)
	wantListening(t, ups, true)
	waitTools("live", "shop/charge") // now held in memory

	proxy.hole(true)
	put() // revoked; its notification is lost on the way
	waitTools("revoked while the session is dead")
	wantListening(t, ups, false)

	proxy.hole(false)
	wantListening(t, ups, true)
	put("shop/refund")
	waitTools("a new session", "shop/refund")
}

// A cancel made while no session listened — its notice went to a dead
// one — is seen when a session is up again: the pool renews its leases at
// once after subscribing, and the renewal reports the cancel. Heartbeats
// an hour apart would see it an hour later.
func TestACancelMissedWhileNotListeningIsSeenAtResubscribe(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := testdb.URL(t)
	db := testdb.Open(t, url)
	proxy := newBlackHole(t, url)
	ups := make(chan bool, 100)
	started := make(chan struct{}, 1)
	cause := make(chan error, 1)
	cfg := worker.Config{Lease: 2 * time.Hour, HeartbeatInterval: time.Hour, Grace: 50 * time.Millisecond,
		Listening: func(up bool) { ups <- up },
		Handlers: map[string]worker.Handler{"block": worker.HandlerFunc(func(ctx context.Context, _ *agentledger.Task) (json.RawMessage, error) {
			started <- struct{}{}
			<-ctx.Done()
			cause <- context.Cause(ctx)
			return nil, ctx.Err()
		})}}
	worker.SetListenHooks(&cfg, testIdle, testPing, testSetup, proxy.connect)
	runPool(t, db, cfg)
	wantListening(t, ups, true)
	s := claims.New(db)
	task := enqueue(t, s, "block", `{}`)
	await(t, started, "the task's start")

	proxy.hole(true)
	wantListening(t, ups, false)
	if _, err := operator.New(db).Cancel(ctx, "", task.ID); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-cause:
		t.Fatalf("the attempt stopped (%v) while no session listened: the test shows nothing", err)
	default:
	}
	await(t, proxy.started, "a reconnect")
	proxy.hole(false)
	wantListening(t, ups, true)
	if err := await(t, cause, "the cancel"); !errors.Is(err, agentledger.ErrCancelled) {
		t.Fatalf("handler context cause = %v, want ErrCancelled", err)
	}
	waitState(t, s, task.ID, agentledger.StateCancelled)
}
