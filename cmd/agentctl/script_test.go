package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/rogpeppe/go-internal/testscript"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/internal/test/testdb"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/notify"
	"github.com/agentledger/agentledger/notify/outbox"
	"github.com/agentledger/agentledger/registry"
	"github.com/agentledger/agentledger/tools"
)

// tbKey holds the script's testing.TB in testscript's values.
type tbKey struct{}

// TestScripts runs testdata/script/*.txtar, each against its own migrated
// database. "exec agentctl" runs this test binary under the name agentctl
// (TestMain then runs the real command). Script commands added here:
//
//	exitcode N           the last agentctl exited with N
//	jsonpath FILE PATH V the JSON in FILE (stdout: the last output) has V at PATH
//	jsonenv FILE PATH NAME
//	                     sets $NAME to the value at PATH of the JSON in FILE
//	announce [-ago D] [-queues Q,…] [-kinds K,…] [-tools T[=FILE],…] [-mcp NAME=STATE,…] WORKER
//	                     a worker pool announces itself D ago (default now)
//	                     serving queues Q (default "default"), kinds K (default
//	                     the built-in ones), tools T (default none announced:
//	                     not checked) and MCP servers; a built-in tool comes
//	                     with its schema, T=FILE with the schema in FILE
//	claim [-lease D] [-ago D] WORKER [QUEUE]
//	                     a worker claims one task, with a lease of D (default
//	                     one hour), on a clock D ago (default now: the task
//	                     must have been due then); sets $TOKEN to its
//	                     fencing token
//	fail ID TEXT         the running task ID's attempt fails with TEXT, finally:
//	                     the task is dead
//	park ID TEXT         the running task ID is stopped for a person with TEXT
//	                     (an interceptor's tools.Park): needs_attention with
//	                     no effect of unknown outcome
//	effect [-compensable] ID STEP OP BODY
//	                     the running task ID performs a keyed effect (one
//	                     whose step declared a compensation) through
//	                     the ledger (or is served it) with result BODY; sets
//	                     $KEY to its ledger key, $KEYPREFIX to its first 12
//	                     characters
//	expireledger         retention removes the ledger rows of every finished task
//	emptydb              point DATABASE_URL at a new database with no schema
//	dispatch [retry|fail TEXT]
//	                     deliver every due outbox event; or fail each delivery
//	                     once with TEXT, to be retried (retry) or given up (fail)
//	message ID STEP CHANNEL TEXT
//	                     write a notify tool message event for task ID
//	slack …              deliver to the script's fake Slack (script_slack_test.go)
//	call TARGET [fail REASON]
//	                     one call to TARGET through the fleet's limits, which
//	                     succeeds or fails (script_flow_test.go)
//	ask … ID STEP TOOL CALL
//	                     the running task ID waits for an approval request
//	                     (script_approvals_test.go)
//	await [-timeout D] ID STEP (signal NAME KEY | timer)
//	                     the running task ID waits durably (script_waits_test.go)
func TestScripts(t *testing.T) {
	t.Parallel()
	bin := scriptBinary(t)
	testscript.Run(t, testscript.Params{
		Dir:                filepath.Join("testdata", "script"),
		RequireUniqueNames: true,
		Setup: func(env *testscript.Env) error {
			// testscript.Run hands Setup the script's *testing.T in a
			// wrapper that still implements testing.TB, so the database
			// is dropped when the script ends.
			tb, ok := env.T().(testing.TB)
			if !ok {
				return fmt.Errorf("testscript gave a %T, not a testing.TB", env.T())
			}
			env.Values[tbKey{}] = tb
			env.Setenv("PATH", bin+string(os.PathListSeparator)+env.Getenv("PATH"))
			env.Setenv("DATABASE_URL", testdb.SmallIDsURL(tb))
			env.Setenv(statusFileEnv, filepath.Join(env.WorkDir, ".agentctl-status"))
			return nil
		},
		Cmds: map[string]func(*testscript.TestScript, bool, []string){
			"exitcode":     cmdExitcode,
			"stdoutenv":    cmdStdoutEnv,
			"jsonpath":     cmdJSONPath,
			"jsonenv":      cmdJSONEnv,
			"announce":     cmdAnnounce,
			"claim":        cmdClaim,
			"fail":         cmdFail,
			"park":         cmdPark,
			"succeed":      cmdSucceed,
			"defer":        cmdDefer,
			"effect":       cmdEffect,
			"expireledger": cmdExpireLedger,
			"emptydb":      cmdEmptyDB,
			"dispatch":     cmdDispatch,
			"message":      cmdMessage,
			"slack":        cmdSlack,
			"call":         cmdCall,
			"ask":          cmdAsk,
			"await":        cmdAwait,
		},
	})
}

// scriptBinary returns a directory holding the agentctl the scripts run:
// this package's test binary (its TestMain is agentctl when so named), or,
// when this one has the race detector, the same package built again
// without it. The scripts run agentctl hundreds of times, and an
// instrumented binary spent about 0.17 s of CPU starting each time plus
// its command's work several times over — most of the suite's longest
// package. What races agentctl's code could have, the in-process tests
// (TestReplayResolveRerun, the console's) run under the detector.
func scriptBinary(t *testing.T) string {
	bin := t.TempDir()
	agentctl := filepath.Join(bin, "agentctl")
	if !raceEnabled {
		exe, err := os.Executable()
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(exe, agentctl); err != nil {
			t.Fatal(err)
		}
		return bin
	}
	build := exec.Command("go", "test", "-c", "-race=false", "-o", agentctl, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building agentctl without the race detector for the scripts: %v\n%s", err, out)
	}
	return bin
}

func cmdExitcode(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 {
		ts.Fatalf("usage: exitcode N")
	}
	b, err := os.ReadFile(ts.Getenv(statusFileEnv))
	if err != nil {
		ts.Fatalf("agentctl recorded no exit code (did it run, did it crash?): %v", err)
	}
	got := strings.TrimSpace(string(b))
	if neg && got == args[0] {
		ts.Fatalf("agentctl exited with %s", got)
	}
	if !neg && got != args[0] {
		ts.Fatalf("agentctl exited with %s, want %s", got, args[0])
	}
}

// cmdStdoutEnv sets the environment variable named to the last command's
// stdout, trimmed: a script takes the id a command printed, never
// writing one down.
func cmdStdoutEnv(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: stdoutenv NAME")
	}
	ts.Setenv(args[0], strings.TrimSpace(ts.ReadFile("stdout")))
}

func cmdJSONPath(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 3 {
		ts.Fatalf("usage: jsonpath FILE PATH VALUE")
	}
	got, err := jsonLookup(scriptJSON(ts, args[0]), args[1])
	switch {
	case err != nil && !neg:
		ts.Fatalf("%s: %v", args[0], err)
	case err == nil && neg && got == args[2]:
		ts.Fatalf("%s: %s is %s", args[0], args[1], got)
	case err == nil && !neg && got != args[2]:
		ts.Fatalf("%s: %s is %s, want %s", args[0], args[1], got, args[2])
	}
}

func cmdJSONEnv(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 3 || neg {
		ts.Fatalf("usage: jsonenv FILE PATH NAME")
	}
	got, err := jsonLookup(scriptJSON(ts, args[0]), args[1])
	if err != nil {
		ts.Fatalf("%s: %v", args[0], err)
	}
	ts.Setenv(args[2], got)
}

// scriptJSON decodes the JSON in the script's file name (numbers kept as
// written).
func scriptJSON(ts *testscript.TestScript, name string) any {
	dec := json.NewDecoder(strings.NewReader(ts.ReadFile(name)))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		ts.Fatalf("%s is not JSON: %v", name, err)
	}
	return doc
}

// jsonLookup follows path (keys and array indexes separated by dots; "#" is
// the length of an array or object; "" or "." the whole document) and
// returns the value found: a string as it is, anything else as compact JSON.
func jsonLookup(v any, path string) (string, error) {
	if path != "" && path != "." {
		for _, seg := range strings.Split(path, ".") {
			switch x := v.(type) {
			case []any:
				if seg == "#" {
					v = json.Number(strconv.Itoa(len(x)))
					continue
				}
				i, err := strconv.Atoi(seg)
				if err != nil || i < 0 || i >= len(x) {
					return "", fmt.Errorf("%s: no element %q in an array of %d", path, seg, len(x))
				}
				v = x[i]
			case map[string]any:
				if seg == "#" {
					v = json.Number(strconv.Itoa(len(x)))
					continue
				}
				e, ok := x[seg]
				if !ok {
					return "", fmt.Errorf("%s: no key %q", path, seg)
				}
				v = e
			default:
				return "", fmt.Errorf("%s: cannot look up %q in %T", path, seg, v)
			}
		}
	}
	if s, ok := v.(string); ok {
		return s, nil
	}
	b, err := json.Marshal(v)
	return string(b), err
}

func cmdAnnounce(ts *testscript.TestScript, neg bool, args []string) {
	usage := "usage: announce [-ago D] [-queues Q,…] [-kinds K,…] [-tools T[=FILE],…] [-mcp NAME=STATE,…] [-caps C,…] WORKER"
	r := registry.Registration{Host: "script", PID: 1, Queues: []string{claims.DefaultQueue},
		Kinds: []string{"agent", "echo", "noop", "sleep", "steps"}}
	var ago time.Duration
	for len(args) >= 2 && strings.HasPrefix(args[0], "-") {
		list := strings.Split(args[1], ",")
		switch args[0] {
		case "-ago":
			d, err := time.ParseDuration(args[1])
			if err != nil {
				ts.Fatalf("%s: %v", usage, err)
			}
			ago = d
		case "-queues":
			r.Queues = list
		case "-kinds":
			r.Kinds = list
		case "-tools":
			r.Tools = map[string]json.RawMessage{}
			for _, t := range list {
				name, file, ok := strings.Cut(t, "=")
				r.Tools[name] = builtinSchemas()[name]
				if ok {
					r.Tools[name] = json.RawMessage(ts.ReadFile(file))
				}
			}
		case "-caps":
			r.Caps = list
		case "-mcp":
			r.MCPServers = map[string]string{}
			for _, kv := range list {
				name, state, _ := strings.Cut(kv, "=")
				r.MCPServers[name] = state
			}
		default:
			ts.Fatalf("%s", usage)
		}
		args = args[2:]
	}
	if neg || len(args) != 1 {
		ts.Fatalf("%s", usage)
	}
	r.ID = args[0]
	pool := scriptPool(ts)
	defer pool.Close()
	s := registry.New(pool)
	if ago > 0 {
		s.Now = func() time.Time { return time.Now().Add(-ago) }
	}
	ts.Check(s.Register(context.Background(), r))
}

// builtinSchemas are the built-in tools' parameter schemas by name, as a
// daemon announces them.
func builtinSchemas() map[string]json.RawMessage {
	builtins, err := tools.Builtins(tools.BuiltinConfig{})
	if err != nil {
		panic(err)
	}
	return tools.NewRegistry(append(builtins, notify.NewTool())...).Schemas()
}

func cmdClaim(ts *testscript.TestScript, neg bool, args []string) {
	usage := "usage: claim [-lease D] [-ago D] WORKER [QUEUE]"
	lease, ago := time.Hour, time.Duration(0)
	for len(args) >= 2 && (args[0] == "-lease" || args[0] == "-ago") {
		d, err := time.ParseDuration(args[1])
		if err != nil {
			ts.Fatalf("%s: %v", usage, err)
		}
		if args[0] == "-lease" {
			lease = d
		} else {
			ago = d
		}
		args = args[2:]
	}
	if neg || len(args) < 1 || len(args) > 2 {
		ts.Fatalf("%s", usage)
	}
	queue := claims.DefaultQueue
	if len(args) == 2 {
		queue = args[1]
	}
	ctx := context.Background()
	pool := scriptPool(ts)
	defer pool.Close()
	s := claims.New(pool)
	if ago > 0 {
		s.Now = func() time.Time { return time.Now().Add(-ago) }
	}
	got, err := s.Claim(ctx, claims.ClaimParams{Queue: queue, Worker: args[0], Limit: 1, Lease: lease})
	ts.Check(err)
	if len(got) != 1 {
		ts.Fatalf("no task to claim in queue %s", queue)
	}
	fmt.Fprintf(ts.Stdout(), "claimed task %d with fencing token %d\n", got[0].ID, got[0].LeaseToken)
	ts.Setenv("TOKEN", strconv.FormatInt(got[0].LeaseToken, 10)) // a clock in µs: scripts take it from here
}

// scriptPool connects to the script's database.
func scriptPool(ts *testscript.TestScript) *pgxpool.Pool {
	pool, err := pgxpool.New(context.Background(), ts.Getenv("DATABASE_URL"))
	ts.Check(err)
	return pool
}

// runningTask returns task id, which must be running.
func runningTask(ts *testscript.TestScript, s *claims.Store, arg string) *agentledger.Task {
	id, err := strconv.ParseInt(arg, 10, 64)
	ts.Check(err)
	t, err := s.Get(context.Background(), "", id)
	ts.Check(err)
	if t.State != agentledger.StateRunning {
		ts.Fatalf("task %d is %s, not running", id, t.State)
	}
	return t
}

// onRunning runs a script command of usage on the running task its first
// argument names: act ends or defers its attempt and says what became of
// it.
func onRunning(ts *testscript.TestScript, neg bool, args []string, usage string,
	act func(s *claims.Store, t *agentledger.Task) (string, error)) {
	if neg || len(args) != strings.Count(usage, " ") {
		ts.Fatalf("usage: %s", usage)
	}
	pool := scriptPool(ts)
	defer pool.Close()
	s := claims.New(pool)
	t := runningTask(ts, s, args[0])
	said, err := act(s, t)
	ts.Check(err)
	fmt.Fprintf(ts.Stdout(), "task %d %s\n", t.ID, said)
}

func cmdFail(ts *testscript.TestScript, neg bool, args []string) {
	onRunning(ts, neg, args, "fail ID TEXT", func(s *claims.Store, t *agentledger.Task) (string, error) {
		st, err := s.Fail(context.Background(), claims.Failure{Lease: claims.LeaseOf(t), Error: args[1], Final: true})
		return "is " + string(st), err
	})
}

func cmdPark(ts *testscript.TestScript, neg bool, args []string) {
	onRunning(ts, neg, args, "park ID TEXT", func(s *claims.Store, t *agentledger.Task) (string, error) {
		return "needs attention", s.NeedsAttention(context.Background(), claims.LeaseOf(t), args[1])
	})
}

func cmdSucceed(ts *testscript.TestScript, neg bool, args []string) {
	onRunning(ts, neg, args, "succeed ID", func(s *claims.Store, t *agentledger.Task) (string, error) {
		return "succeeded", s.Succeed(context.Background(), claims.LeaseOf(t), json.RawMessage(`{}`))
	})
}

// cmdDefer defers a running task for an hour, as a worker does when its
// next call waits for a limit.
func cmdDefer(ts *testscript.TestScript, neg bool, args []string) {
	onRunning(ts, neg, args, "defer ID REASON", func(s *claims.Store, t *agentledger.Task) (string, error) {
		return "deferred", s.Defer(context.Background(), claims.Deferral{Lease: claims.LeaseOf(t), Until: time.Now().Add(time.Hour), Reason: args[1]})
	})
}

func cmdEffect(ts *testscript.TestScript, neg bool, args []string) {
	compensable := len(args) > 0 && args[0] == "-compensable"
	if compensable {
		args = args[1:]
	}
	failed := len(args) > 0 && args[0] == "-failed" // the downstream refuses it for good: recorded failed
	if failed {
		args = args[1:]
	}
	if neg || len(args) != 4 {
		ts.Fatalf("usage: effect [-compensable] [-failed] ID STEP OP BODY")
	}
	pool := scriptPool(ts)
	defer pool.Close()
	t := runningTask(ts, claims.New(pool), args[0])
	res, err := ledger.New(pool).Do(context.Background(), tools.AttemptOf(t), ledger.Effect{
		Operation: args[2], StepPath: args[1], Class: ledger.Keyed, Request: json.RawMessage(`{}`),
		Compensate: undoBy(compensable, "http_request"),
		Perform: func(context.Context, ledger.Call) (ledger.Result, error) {
			if failed {
				return ledger.Result{Status: 422, Body: json.RawMessage(args[3])}, agentledger.Permanent(errors.New("422 Unprocessable Entity"))
			}
			return ledger.Result{Status: 200, Body: json.RawMessage(args[3])}, nil
		},
	})
	if failed && err != nil {
		fmt.Fprintf(ts.Stdout(), "effect %s %s of task %d failed: %v\n", args[1], args[2], t.ID, err)
		return
	}
	ts.Check(err)
	key := ledger.EffectKey(t.Tenant, t.ID, t.Generation, args[1], args[2])
	ts.Setenv("KEY", key)
	ts.Setenv("KEYPREFIX", key[:12])
	how := "performed"
	if res.Replayed {
		how = "served from the ledger"
	}
	fmt.Fprintf(ts.Stdout(), "effect %s %s of task %d %s\n", args[1], args[2], t.ID, how)
}

func cmdExpireLedger(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 0 {
		ts.Fatalf("usage: expireledger")
	}
	pool := scriptPool(ts)
	defer pool.Close()
	n, err := ledger.New(pool).Expire(context.Background(), claims.LedgerRetention{}, ledger.Retention{Default: time.Nanosecond}, 0)
	ts.Check(err)
	fmt.Fprintf(ts.Stdout(), "expired %d ledger rows\n", n)
}

func cmdEmptyDB(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 0 {
		ts.Fatalf("usage: emptydb")
	}
	tb := ts.Value(tbKey{}).(testing.TB)
	ts.Setenv("DATABASE_URL", testdb.Empty(tb))
}

// deliverFunc is an outbox.Handler.
type deliverFunc func(context.Context, outbox.Claimed) error

func (f deliverFunc) Deliver(ctx context.Context, c outbox.Claimed) (string, error) {
	return "", f(ctx, c)
}

func cmdDispatch(ts *testscript.TestScript, neg bool, args []string) {
	var h deliverFunc
	switch {
	case neg:
		ts.Fatalf("usage: dispatch [retry|fail TEXT]")
	case len(args) == 0:
		h = func(context.Context, outbox.Claimed) error { return nil }
	case len(args) == 2 && args[0] == "retry":
		h = func(context.Context, outbox.Claimed) error { return errors.New(args[1]) }
	case len(args) == 2 && args[0] == "fail":
		h = func(context.Context, outbox.Claimed) error { return agentledger.Permanent(errors.New(args[1])) }
	default:
		ts.Fatalf("usage: dispatch [retry|fail TEXT]")
	}
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, ts.Getenv("DATABASE_URL"))
	ts.Check(err)
	defer pool.Close()
	// A retried event is due again only after its backoff: one pass each.
	d, err := outbox.NewDispatcher(outbox.NewStore(pool), h, outbox.Config{Owner: "script",
		Backoff: agentledger.Backoff{Base: time.Hour, Max: time.Hour}})
	ts.Check(err)
	total := 0
	for {
		n, err := d.RunOnce(ctx)
		ts.Check(err)
		if n == 0 {
			break
		}
		total += n
	}
	fmt.Fprintf(ts.Stdout(), "dispatched %d events\n", total)
}

func cmdMessage(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 4 {
		ts.Fatalf("usage: message ID STEP CHANNEL TEXT")
	}
	id, err := strconv.ParseInt(args[0], 10, 64)
	ts.Check(err)
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, ts.Getenv("DATABASE_URL"))
	ts.Check(err)
	defer pool.Close()
	t, err := claims.New(pool).Get(ctx, "", id)
	ts.Check(err)
	ev, err := outbox.AddMessage(ctx, pool, outbox.Message{Tenant: t.Tenant, TaskID: id, Generation: t.Generation, Attempt: t.Attempt,
		StepPath: args[1], Channel: args[2], Text: args[3]})
	ts.Check(err)
	fmt.Fprintf(ts.Stdout(), "message event %d\n", ev)
}

// undoBy is the compensation an effect declares when it has one: a call of
// tool (what the task's payload would declare).
func undoBy(has bool, tool string) json.RawMessage {
	if !has {
		return nil
	}
	return json.RawMessage(`{"tool":"` + tool + `","args":{}}`)
}
