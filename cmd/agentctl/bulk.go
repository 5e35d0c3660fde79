package main

import (
	"bufio"
	"cmp"
	"context"
	"fmt"
	"golang.org/x/term"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/operator"
)

// bulkFlags are the options of a command's bulk form (--all) as given:
// the filter of the tasks it acts on and the confirmation.
type bulkFlags struct {
	all         bool
	queue, kind string
	states      []string
	timeRange
	yes bool
}

// bulkFilterFlags are the flags that only the bulk form takes.
var bulkFilterFlags = []string{"queue", "kind", "state", "since", "until", "yes"}

// addBulkFlags adds --all, its filter flags and --yes to cmd, bound to f;
// verb is what the command does ("retry").
func addBulkFlags(cmd *cobra.Command, f *bulkFlags, verb string) {
	fl := cmd.Flags()
	fl.BoolVar(&f.all, "all", false, verb+" every task the filter flags select, instead of one task ID")
	fl.StringVar(&f.queue, "queue", "", "with --all: only tasks of this queue")
	fl.StringVar(&f.kind, "kind", "", "with --all: only tasks of this kind")
	timeRangeFlags(cmd, &f.timeRange, "with --all: ")
	fl.BoolVar(&f.yes, "yes", false, "with --all: do not ask for confirmation (needed when standard input is not a terminal)")
}

// args accepts one task ID, or none with --all; the filter flags go only
// with --all.
func (f *bulkFlags) args(cmd *cobra.Command, args []string) error {
	if f.all {
		if len(args) > 0 {
			return usagef("%s --all takes no task ID: give a task ID or --all, not both", commandName(cmd))
		}
		return nil
	}
	for _, name := range bulkFilterFlags {
		if fl := cmd.Flags().Lookup(name); fl != nil && fl.Changed {
			return usagef("--%s applies only with --all (%s --all --%s …)", name, cmd.CommandPath(), name)
		}
	}
	return oneID(cmd, args)
}

// bulkAction is a bulk form's wording and its store call.
type bulkAction struct {
	verb, past string // "retry", "retried"
	// noun qualifies the tasks the filter matches: "dead", "unfinished".
	noun string
	// after, when set, is printed once some tasks were acted on.
	after string
	do    func(ctx context.Context, svc *operator.Service, p claims.ListParams) (operator.BulkResult, error)
}

// bulkResult is the JSON output of a bulk action.
type bulkResult struct {
	Action string `json:"action"`
	// Matched is how many tasks the filter matched when counted, before
	// the confirmation.
	Matched int64   `json:"matched"`
	Done    []int64 `json:"done"`
	// Flagged are, for a cancel, running tasks asked to stop before their
	// next call.
	Flagged []int64       `json:"flagged"`
	Skipped []skippedTask `json:"skipped"`
}

// skippedTask is a task a bulk action did not apply to, and why.
type skippedTask struct {
	ID     int64  `json:"id"`
	Reason string `json:"reason"`
}

// bulk runs act on the tasks of tenant that f selects in states: it counts
// them, asks for confirmation unless --yes, acts and reports what it did
// and skipped.
func (a *app) bulk(ctx context.Context, tenant string, f *bulkFlags, states []agentledger.TaskState, act bulkAction) error {
	p := claims.ListParams{Tenant: tenant, Queue: f.queue, Kind: f.kind, States: states}
	if err := f.timeRange.apply(&p, time.Now()); err != nil {
		return err
	}
	s, err := a.store(ctx)
	if err != nil {
		return err
	}
	counts, err := s.Count(ctx, p)
	if err != nil {
		return err
	}
	var matched int64
	var byState []string
	for _, st := range states {
		if n := counts[st]; n > 0 {
			matched += n
			byState = append(byState, fmt.Sprintf("%d %s", n, st))
		}
	}
	// The count is for people; with JSON it goes to stderr.
	info := a.stdout
	if a.wantJSON() {
		info = a.stderr
	}
	line := fmt.Sprintf("%s %s %s", plural(matched, act.noun+" task"), matchVerb(matched), describeFilter(p))
	if len(byState) > 1 {
		line += " (" + strings.Join(byState, ", ") + ")"
	}
	fmt.Fprintln(info, line)
	res := bulkResult{Action: act.verb, Matched: matched, Done: []int64{}, Flagged: []int64{}, Skipped: []skippedTask{}}
	if matched == 0 {
		if a.wantJSON() {
			return printJSON(a.stdout, res)
		}
		_, err := fmt.Fprintf(a.stdout, "nothing to %s\n", act.verb)
		return err
	}
	if !f.yes {
		question := fmt.Sprintf("%s %s?", capitalize(act.verb), plural(matched, "task"))
		if err := a.confirm(question, act.verb+" --all", act.past); err != nil {
			return err
		}
	}
	svc := operator.New(a.db.Pool)
	svc.BulkProgress = func(n int) { // a page at a time, each task its own transition: say how far it is
		fmt.Fprintf(a.stderr, "%s %d of %d…\n", act.verb, n, matched)
	}
	done, err := act.do(ctx, svc, p)
	res.Done = append(res.Done, done.Done...)
	res.Flagged = append([]int64{}, done.Flagged...)
	for id, why := range done.Skipped {
		res.Skipped = append(res.Skipped, skippedTask{ID: id, Reason: skipReason(why)})
	}
	slices.SortFunc(res.Skipped, func(x, y skippedTask) int { return cmp.Compare(y.ID, x.ID) }) // newest first
	if err != nil {
		// Part of the work may be done: say what before failing.
		if len(res.Done) > 0 {
			fmt.Fprintf(a.stderr, "%s %s before the error: %s\n", act.past, plural(int64(len(res.Done)), "task"), idList(res.Done, 20))
		}
		return err
	}
	if a.wantJSON() {
		return printJSON(a.stdout, res)
	}
	return printBulk(a.stdout, act, res)
}

// printBulk writes what a bulk action did and skipped, for people.
func printBulk(w io.Writer, act bulkAction, res bulkResult) error {
	switch {
	case len(res.Done) == 0 && len(res.Flagged) > 0:
	case len(res.Done) == 0:
		fmt.Fprintf(w, "%s no task\n", act.past)
	default:
		fmt.Fprintf(w, "%s %s: %s\n", act.past, plural(int64(len(res.Done)), "task"), idList(res.Done, 20))
		if act.after != "" {
			fmt.Fprintln(w, act.after)
		}
	}
	if len(res.Flagged) > 0 {
		fmt.Fprintf(w, "asked %s to stop: %s (each stops before its next call)\n",
			plural(int64(len(res.Flagged)), "running task"), idList(res.Flagged, 20))
	}
	if len(res.Skipped) == 0 {
		return nil
	}
	fmt.Fprintf(w, "skipped %s:\n", plural(int64(len(res.Skipped)), "task"))
	t := newTable(w, "ID", "REASON")
	for _, s := range res.Skipped {
		t.row(strconv.FormatInt(s.ID, 10), s.Reason)
	}
	return t.flush()
}

// skipReason is a store error, as a bulk action reports it for one task,
// without its sentinel's suffix.
func skipReason(msg string) string {
	for _, sentinel := range []error{agentledger.ErrConflict, agentledger.ErrNotFound} {
		msg = strings.TrimSuffix(msg, ": "+sentinel.Error())
	}
	return msg
}

// confirm asks the person at the terminal the question and succeeds if they
// answer yes. Without a terminal to ask on it refuses with a usage error
// naming --yes; an answer other than yes is a failure (exit 1). what names
// the command ("retry --all"), past its verb in the past tense.
func (a *app) confirm(question, what, past string) error {
	refuse := withHint(usagef("%s needs confirmation and standard input is not a terminal to ask on", what),
		"re-run with --yes to proceed without asking")
	if !isTerminal(a.stdin) {
		return refuse
	}
	fmt.Fprintf(a.stderr, "%s [y/N] ", question)
	answer, err := bufio.NewReader(a.stdin).ReadString('\n')
	if answer == "" && err != nil {
		// End of input (a terminal closed, /dev/null): nobody answered.
		fmt.Fprintln(a.stderr)
		return refuse
	}
	switch strings.ToLower(strings.TrimSpace(answer)) {
	case "y", "yes":
		return nil
	}
	return newError(fmt.Sprintf("not confirmed: no task %s", past), nil)
}

// isTerminal reports whether r is a terminal (a character device), where a
// person can be asked a question.
func isTerminal(r io.Reader) bool {
	// A file is asked whether it is a terminal, not only a character
	// device: /dev/null is one, and has nobody to answer.
	if f, ok := r.(interface{ Fd() uintptr }); ok {
		return term.IsTerminal(int(f.Fd()))
	}
	f, ok := r.(interface{ Stat() (os.FileInfo, error) })
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// matchVerb agrees "match" with a count.
func matchVerb(n int64) string {
	if n == 1 {
		return "matches"
	}
	return "match"
}

// capitalize upper-cases the first letter of an ASCII word.
func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// idList joins task ids, at most max of them, saying how many more there
// are.
func idList(ids []int64, max int) string {
	parts := make([]string, 0, min(len(ids), max))
	for i, id := range ids {
		if i == max {
			parts = append(parts, fmt.Sprintf("… and %d more", len(ids)-max))
			break
		}
		parts = append(parts, strconv.FormatInt(id, 10))
	}
	return strings.Join(parts, ", ")
}
