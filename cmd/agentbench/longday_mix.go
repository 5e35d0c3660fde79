package main

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/agentledger/agentledger/agentledgertest/fakeopenai"
)

// The classes of a long day's tasks. Each task's submission key is
// "ld-<class>-<n>", so the tasks table says which class a task is of (cron's
// tasks have no key); "deny" is an approval task the harness denies.
const (
	classSteps   = "steps"   // one keyed http_request
	classAgent   = "agent"   // an agent on the fake model calling http_request once
	classNotify  = "notify"  // one keyed http_request in queue notify, whose rule posts to Slack
	classSaga    = "saga"    // a charge with a refund as compensation, then a refused shipment
	classApprove = "approve" // an http_request behind an approval gate the harness decides
	classDeny    = "deny"    // as approve, denied: the task fails for good, nothing is performed
	classSignal  = "signal"  // waits for a signal the harness sends, then one http_request
	classTimer   = "timer"   // a durable wait_timer, then one http_request
	classCron    = "cron"    // the cron schedule's noop tasks
)

// mixClasses are the classes --mix may name, in the order rows list them.
var mixClasses = []string{classSteps, classAgent, classNotify, classSaga, classApprove, classSignal, classTimer}

// allClasses are the classes of the tasks table, in the order rows list them.
var allClasses = []string{classSteps, classAgent, classNotify, classSaga, classApprove, classDeny, classSignal, classTimer, classCron}

// defaultMix is --mix's default: mostly plain keyed effects, as a business
// day is, with every other kind of work present every second at 1,000
// tasks/s (a tenth agents, a tenth sagas, 3% each of approvals, signals,
// timers and Slack notifications).
const defaultMix = "steps=71,agent=10,saga=10,notify=3,approve=2,signal=2,timer=2"

// ldNotifyQueue is the queue of notify tasks; ldNotifyChannel the Slack
// channel their rule posts to; ldApprovalsChannel agentd's approvals channel.
const (
	ldNotifyQueue      = "notify"
	ldNotifyChannel    = "ld-notify"
	ldApprovalsChannel = "ld-approvals"
	ldSignal           = "ld.paid"
	ldTimer            = "2s"
)

// denyEvery: every denyEvery-th approval task is denied.
const denyEvery = 4

// Mix is the share of each class in the offered load, in whole parts.
type Mix struct {
	parts map[string]int
	wheel []string // one entry per part, interleaved, for a steady mix in every batch
}

// parseMix reads "class=parts,…"; classes not named get no share.
func parseMix(s string) (Mix, error) {
	m := Mix{parts: map[string]int{}}
	total := 0
	for _, f := range strings.Split(s, ",") {
		name, v, ok := strings.Cut(strings.TrimSpace(f), "=")
		if !ok {
			return m, fmt.Errorf("%q is not class=parts", f)
		}
		if !slices.Contains(mixClasses, name) {
			return m, fmt.Errorf("unknown class %q (use %s)", name, strings.Join(mixClasses, ", "))
		}
		if _, dup := m.parts[name]; dup {
			return m, fmt.Errorf("class %q named twice", name)
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > 1000 {
			return m, fmt.Errorf("%s: %q is not a whole number of parts from 0 to 1000", name, v)
		}
		m.parts[name] = n
		total += n
	}
	if total == 0 {
		return m, fmt.Errorf("no class has a share")
	}
	// Interleave: at each step take the class furthest behind its share.
	given := map[string]int{}
	for i := 1; i <= total; i++ {
		best, lag := "", -1.0
		for _, c := range mixClasses {
			if m.parts[c] == 0 {
				continue
			}
			if l := float64(m.parts[c]*i)/float64(total) - float64(given[c]); l > lag {
				best, lag = c, l
			}
		}
		given[best]++
		m.wheel = append(m.wheel, best)
	}
	return m, nil
}

// class is the class of the n-th task offered.
func (m Mix) class(n int) string { return m.wheel[n%len(m.wheel)] }

// String gives the mix in percent.
func (m Mix) String() string {
	var out []string
	for _, c := range mixClasses {
		if p := m.parts[c]; p > 0 {
			out = append(out, fmt.Sprintf("%s %.0f%%", c, 100*float64(p)/float64(len(m.wheel))))
		}
	}
	return strings.Join(out, ", ")
}

// ldTask is one task to offer: its class, key and payload.
type ldTask struct {
	class, key string
	kind       string
	queue      string
	payload    json.RawMessage
}

// ldPayloads builds the tasks of each class against the downstream at base.
type ldPayloads struct{ base string }

// post is an http_request step's args: a keyed POST of a body naming the task.
func (p ldPayloads) post(path, key string, extra string) string {
	return fmt.Sprintf(`{"method":"POST","url":%q,"body":{"task":%q%s}}`, p.base+path, key, extra)
}

// task returns the n-th task of class c (n counts that class's tasks, for
// approval tasks, whether it is denied).
func (p ldPayloads) task(c string, n int) ldTask {
	if c == classApprove && n%denyEvery == denyEvery-1 {
		c = classDeny
	}
	key := fmt.Sprintf("ld-%s-%d", c, n)
	t := ldTask{class: c, key: key, kind: "steps"}
	var steps string
	switch c {
	case classSteps:
		steps = fmt.Sprintf(`{"tool":"http_request","args":%s}`, p.post("/charges", key, ""))
	case classNotify:
		t.queue = ldNotifyQueue
		steps = fmt.Sprintf(`{"tool":"http_request","args":%s}`, p.post("/orders", key, ""))
	case classSaga:
		steps = fmt.Sprintf(`{"tool":"http_request","args":%s,"compensate":{"tool":"http_request","args":%s}},`+
			`{"tool":"http_request","args":%s}`,
			p.post("/charges", key, ""), p.post("/refunds", key, `,"charge":"${self.body.id}"`), p.post(ldRefusedPath, key, ""))
	case classApprove, classDeny:
		steps = fmt.Sprintf(`{"tool":"http_request","args":%s,"approve":true}`, p.post("/payouts", key, ""))
	case classSignal:
		steps = fmt.Sprintf(`{"tool":"wait_for_signal","args":{"signal":%q,"key":%q,"timeout":"1h"}},`+
			`{"tool":"http_request","args":%s}`, ldSignal, key, p.post("/charges", key, `,"amount":"${steps.0.body.amount}"`))
	case classTimer:
		steps = fmt.Sprintf(`{"tool":"wait_timer","args":{"for":%q}},{"tool":"http_request","args":%s}`,
			ldTimer, p.post("/charges", key, ""))
	case classAgent:
		t.kind = "agent"
		t.payload = json.RawMessage(fmt.Sprintf(`{"prompt":"charge order %s","tools":["http_request"],"max_steps":3}`, key))
		return t
	}
	t.payload = json.RawMessage(`{"steps":[` + steps + `]}`)
	return t
}

// ldRefusedPath is the downstream path that refuses every request (422): a
// saga's last step fails for good there, and its charge is refunded.
const ldRefusedPath = "/shipments"

// ldEffects is how many business effects a task of each class has at the
// downstream once it finished as expected.
var ldEffects = map[string]int{classSteps: 1, classAgent: 1, classNotify: 1, classSaga: 2, classApprove: 1, classDeny: 0,
	classSignal: 1, classTimer: 1, classCron: 0}

// ldExpected is the state a task of each class ends in.
var ldExpected = map[string]string{classSaga: "compensated", classDeny: "dead"}

func expectedState(class string) string {
	if s, ok := ldExpected[class]; ok {
		return s
	}
	return "succeeded"
}

// ldModel answers the agent tasks: a call of http_request charging the
// order the prompt names, then, once the tool answered, a closing text.
func ldModel(base string) func(fakeopenai.Request) fakeopenai.Reply {
	return func(r fakeopenai.Request) fakeopenai.Reply {
		var key string
		for _, m := range r.Messages {
			if m.Role == "tool" {
				return fakeopenai.Text("charged")
			}
			if m.Role == "user" {
				key = strings.TrimPrefix(m.Content, "charge order ")
			}
		}
		args, _ := json.Marshal(map[string]any{"method": "POST", "url": base + "/agent-charges", "body": map[string]string{"task": key}})
		return fakeopenai.Calls(fakeopenai.ToolCall{ID: "call_" + key, Name: "http_request", Arguments: string(args)})
	}
}
