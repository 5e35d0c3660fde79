package worker

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/claims"
)

// Config tunes a Pool. Zero fields take the defaults documented on each.
type Config struct {
	// ID names this worker in leases and attempt records; default
	// <hostname>-<pid>-<random>.
	ID string
	// Queues to work; default ["default"].
	Queues []string
	// Concurrency is how many tasks run at once per queue; default 100.
	Concurrency int
	// BatchSize caps one claim; default Concurrency.
	BatchSize int
	// Lease is how long a claim lasts without a heartbeat; default 30s.
	Lease time.Duration
	// HeartbeatInterval between lease renewals; default Lease/3.
	HeartbeatInterval time.Duration
	// PollInterval between claims when no notification arrives; default 1s.
	PollInterval time.Duration
	// PollOnly disables LISTEN/NOTIFY (for PgBouncer transaction pooling).
	PollOnly bool
	// ClaimCooldown is the least time from the end of one claim to the
	// start of the next one woken by a notification or a freed slot, so
	// that tasks arriving close together share a claim and its commit (a
	// commit costs the database more than the claim's work); default
	// 500µs, negative for none. A claim that filled its batch is followed
	// at once whatever this says; one that filled every free slot but not
	// its batch waits for a slot to free, then for this. On Linux a
	// cooldown under a millisecond lasts about one (Go's timers wake there
	// in whole milliseconds, BenchmarkShortWait): the default waits ~1.1ms
	// when it applies, which is what BENCHMARKS.md measured.
	ClaimCooldown time.Duration
	// CompletionWait is how long the completer, given an outcome to write,
	// waits for more to write in the same statement while it has fewer
	// than 100; zero takes the default, 20ms (River's completer flushes
	// every 50ms); negative is refused. At low rates a statement (and a commit) per
	// outcome costs the database several times its share of a batched one;
	// under load batches fill without waiting.
	// A task's slot frees as soon as its outcome is queued, so the wait
	// delays only when the task shows as finished, never the next claim;
	// shutdown waits for every outcome to be written.
	CompletionWait time.Duration
	// Grace is how long shutdown waits for running tasks before releasing
	// them; default 10s.
	Grace time.Duration
	// Backoff decides retry delays; default agentledger.DefaultBackoff.
	Backoff agentledger.Backoff
	// Handlers maps task kinds to their handlers.
	Handlers map[string]Handler
	// Logger; default slog.Default().
	Logger *slog.Logger
	// Observer is told what the pool does, for metrics; default none.
	Observer Observer
	// MCPStates, when set, are announced with the pool (agentctl workers):
	// the states of its daemon's MCP servers.
	MCPStates func() map[string]string
	// Tools, when set, are announced with the pool: the tools its steps
	// and agent tasks may call, with their parameter schemas by name,
	// which the submit check holds a steps payload's tools and arguments
	// against. Without it they are not checked.
	Tools func() map[string]json.RawMessage
	// ToolClasses, if set, gives the classes of the tools whose class does
	// not depend on their arguments, announced with them.
	ToolClasses func() map[string]string
	// KindSchemas are the payload schemas of its typed kinds by name,
	// announced with the pool: a submission of one of them to one of its
	// queues must fit (registry.Store.KindSchemas).
	KindSchemas map[string]json.RawMessage
	// Caps, if set, says what the pool can run beyond its kinds now
	// (registry.CapTool and the others), sorted: announced with the pool,
	// matched by its claims against tasks' needs, and checked again before
	// a task runs. Without it the pool claims any task of its kinds.
	Caps func() []string
	// Channels are more channels the pool's LISTEN session subscribes to
	// (none with PollOnly), each with the function told a notification's
	// payload. It is called on the listening goroutine, in delivery order:
	// before a task notified after it is claimed through its notification.
	Channels map[string]func(payload string)
	// Listening, when set, is told when the LISTEN session is up (every
	// channel subscribed) and when it is lost: meanwhile notifications may
	// be missed. A session quiet for 5s is pinged, and one that does not
	// answer within 2s is lost: Listening(false) comes within about 7s of a
	// connection going dead, even one the network left half-open.
	Listening func(up bool)

	listen listenHooks // tests only: see listen.go
	// announceEvery replaces announceInterval (tests only: 0 keeps it).
	announceEvery time.Duration
}

// Observer is told what a pool does. Its methods are called from many
// goroutines and must be cheap.
type Observer interface {
	// Claimed: n tasks of queue were claimed.
	Claimed(queue string, n int)
	// LeaseLost: an attempt lost its lease and was abandoned, or its
	// outcome was fenced out.
	LeaseLost()
	// Finished: an attempt of a task of kind ended, leaving the task in
	// state, after running for d.
	Finished(kind string, state agentledger.TaskState, d time.Duration)
}

// DeferObserver, when an Observer implements it, is told of each attempt
// deferred to wait for a limit on a target of targetKind ("http").
type DeferObserver interface {
	Deferred(kind, targetKind string)
}

// StartObserver, when an Observer implements it, is told of each task
// this pool took at its enqueue, without a claim (Pool.Reserve); Claimed
// counts it too.
type StartObserver interface {
	StartedAtEnqueue(queue string)
}

type noObserver struct{}

func (noObserver) Claimed(string, int)                                   {}
func (noObserver) LeaseLost()                                            {}
func (noObserver) Finished(string, agentledger.TaskState, time.Duration) {}

// Check reports the mistake New would refuse c for, but for its Handlers:
// a program may check its settings before it opens a database.
func (c Config) Check() error {
	c.defaults()
	return c.check()
}

func (c *Config) setDefaults() error {
	c.defaults()
	if err := c.check(); err != nil {
		return err
	}
	if len(c.Handlers) == 0 {
		return fmt.Errorf("worker: no handlers")
	}
	return nil
}

func (c *Config) defaults() {
	if c.ID == "" {
		host, _ := os.Hostname()
		b := make([]byte, 3)
		_, _ = rand.Read(b)
		c.ID = fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b))
	}
	if len(c.Queues) == 0 {
		c.Queues = []string{claims.DefaultQueue}
	}
	if c.Concurrency == 0 {
		c.Concurrency = 100
	}
	if c.BatchSize == 0 || c.BatchSize > c.Concurrency {
		c.BatchSize = c.Concurrency
	}
	if c.Lease == 0 {
		c.Lease = 30 * time.Second
	}
	if c.HeartbeatInterval == 0 {
		c.HeartbeatInterval = c.Lease / 3
	}
	if c.PollInterval == 0 {
		c.PollInterval = time.Second
	}
	if c.Grace == 0 {
		c.Grace = 10 * time.Second
	}
	switch {
	case c.ClaimCooldown == 0:
		c.ClaimCooldown = 500 * time.Microsecond
	case c.ClaimCooldown < 0:
		c.ClaimCooldown = 0
	}
	if c.CompletionWait == 0 {
		c.CompletionWait = 20 * time.Millisecond
	}
	if c.Backoff.Base == 0 {
		c.Backoff = agentledger.DefaultBackoff
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Observer == nil {
		c.Observer = noObserver{}
	}
}

// check refuses settings, defaults applied, no pool can work with; the
// error is an *agentledger.InvalidError naming the setting.
func (c *Config) check() error {
	bad := func(field, format string, args ...any) error {
		return fmt.Errorf("worker: %w", agentledger.Invalid(field, format, args...))
	}
	// A queue no task could be submitted to: the claim would find none.
	badQueue := slices.IndexFunc(c.Queues, func(q string) bool { return !agentledger.ValidName(q) })
	switch {
	case c.Concurrency < 0:
		return bad("concurrency", "%d must be positive", c.Concurrency)
	case c.BatchSize < 0:
		return bad("batch_size", "%d must be positive", c.BatchSize)
	case c.PollInterval < 0:
		return bad("poll_interval", "%s must be positive", c.PollInterval)
	case c.Grace < 0:
		return bad("grace", "%s must not be negative", c.Grace)
	case c.CompletionWait < 0:
		return bad("completion_wait", "%s must not be negative", c.CompletionWait)
	case slices.Contains(c.Queues, ""):
		return bad("queues", "a queue name is empty (queues %q)", c.Queues)
	case badQueue >= 0:
		return bad("queues", "queue %q must be 1-128 characters of letters, digits, '.', '_', ':' or '-', as a task's queue is", c.Queues[badQueue])
	case c.Lease < time.Second:
		return bad("lease", "%s is shorter than 1s", c.Lease)
	case c.HeartbeatInterval <= 0 || c.HeartbeatInterval > c.Lease/2:
		return bad("heartbeat_interval", "%s must be positive and at most half the lease (%s)", c.HeartbeatInterval, c.Lease)
	}
	return nil
}
