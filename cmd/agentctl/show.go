package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/approvals"
	"github.com/agentledger/agentledger/operator"
	"github.com/agentledger/agentledger/render"
	"github.com/agentledger/agentledger/waits"
)

func (a *app) showCmd() *cobra.Command {
	var tenant string
	cmd := &cobra.Command{
		Use:   "show ID",
		Short: "Show a task, its lease, its attempts, its journal and its notifications",
		Long: `Show every field of a task, its payload and result pretty-printed, its
lease (owner, fencing token, expiry) and, for a running steps or agent
task, where it is (the first step with no recorded effect), its attempts,
and the journal of its
current generation: every effect in the order it was intended, with its
operation, class, key, state, how many times it was performed and a summary
of its stored result. Notifications lists the task's notification events
(of every generation): each state change a rule asked to hear about and each
message of the notify tool, with its delivery state, failed deliveries and
last error. The messages posted and updated for them are the journal's
notify.post and notify.update effects, whose ref is the message.

Waits lists the task's durable waits, newest first: what each waited or
waits for (a signal and its correlation key, a timer, its children), its
deadline and how it ended.

A task created by another (create_task) names its parent; one that created
tasks lists its current generation's children and their states.

With --output json it prints {"task": {...}, "compensation_cause": "...",
"compensation_requested_by": "...", "attempts": [...], "journal": [...],
"notifications": [...], "approvals": [...], "waits": [...], "parent": {...},
"children": [...], "child_count": N} (at most the first 100 children listed;
compensation_cause, the error that sent the task to undo its effects, only
for a task that did; compensation_requested_by, who asked it to
("operator:alice", "tenant:acme, token ci-deploy (7)"), only for a task
someone asked and whose requester is recorded).`,
		Example: `  agentctl show 42
  agentctl show 42 --output json`,
		Args: oneID,
		RunE: a.action(func(ctx context.Context, args []string) error { return a.show(ctx, tenant, args[0]) }),
	}
	tenantFlag(cmd, &tenant, "only if the task belongs to this tenant")
	return cmd
}

// showResult is show's JSON output.
type showResult struct {
	Task *agentledger.Task `json:"task"`
	// CompensationCause is, for a task that undoes or undid its effects,
	// the error that sent it there, as the API's task says it (a finished
	// compensation clears the task's last_error). Absent otherwise.
	CompensationCause string `json:"compensation_cause,omitempty"`
	// CompensationRequestedBy is who asked the task to undo its effects
	// (agentctl compensate, the console: "operator:alice"; the API:
	// "tenant:acme, token ci-deploy (7)"). Absent when no one asked (a
	// failure, a cancel) or who did is not recorded.
	CompensationRequestedBy string                `json:"compensation_requested_by,omitempty"`
	Attempts                []agentledger.Attempt `json:"attempts"`
	Journal                 []journalEntry        `json:"journal"`
	// Notifications are the task's outbox events, oldest first.
	Notifications []notification `json:"notifications"`
	// Approvals are the task's approval requests and their decisions.
	Approvals []approvals.Request `json:"approvals"`
	// Waits are the task's durable waits (of every generation), newest
	// first: what it waits or waited for, its key and deadline.
	Waits []waits.Wait `json:"waits"`
	// Parent is the task that created it, if one did; Children those its
	// current generation created, oldest first.
	Parent   *operator.Relative  `json:"parent,omitempty"`
	Children []operator.Relative `json:"children"`
	// ChildCount is how many children it has: more than Children lists
	// when over operator.MaxChildren.
	ChildCount int `json:"child_count"`
}

// journalEntry is one effect as show prints it.
type journalEntry = operator.Effect

// notification is one notification event as show prints it.
type notification = operator.Notification

// operator returns the operator service over the (migrated) database.
func (a *app) operator(ctx context.Context) (*operator.Service, error) {
	if _, err := a.store(ctx); err != nil { // opens and checks the schema
		return nil, err
	}
	return operator.New(a.db.Pool), nil
}

func (a *app) show(ctx context.Context, tenant, arg string) error {
	id, err := parseID(arg)
	if err != nil {
		return err
	}
	svc, err := a.operator(ctx)
	if err != nil {
		return err
	}
	d, err := svc.Show(ctx, tenant, id)
	if err != nil {
		return err
	}
	t, atts := d.Task, d.Attempts
	journal, notes := d.Journal, d.Notifications
	ws, err := waits.NewStore(a.db.Pool).List(ctx, waits.ListParams{Tenant: tenant, TaskID: id, States: waitStates})
	if err != nil {
		return err
	}
	if a.wantJSON() {
		if ws == nil {
			ws = []waits.Wait{}
		}
		if atts == nil {
			atts = []agentledger.Attempt{}
		}
		asked := d.Approvals
		if asked == nil {
			asked = []approvals.Request{}
		}
		kids := d.Children
		if kids == nil {
			kids = []operator.Relative{}
		}
		var cause, by string
		if c, ok := render.CompensationOf(t, atts, journal, d.CompensationRequestedBy); ok {
			cause, by = agentledger.CompensationCause(t.Generation, atts), c.RequestedBy
		}
		return printJSON(a.stdout, showResult{Task: t, CompensationCause: cause, CompensationRequestedBy: by, Attempts: atts, Journal: journal,
			Notifications: notes, Approvals: asked, Waits: ws, Parent: d.Parent, Children: kids, ChildCount: d.ChildCount})
	}
	if err := printTask(a.stdout, d, time.Now()); err != nil {
		return err
	}
	if err := printJournal(a.stdout, t.Generation, journal); err != nil {
		return err
	}
	if err := printApprovals(a.stdout, d.Approvals); err != nil {
		return err
	}
	counts, err := waits.NewStore(a.db.Pool).ChildCounts(ctx, ws)
	if err != nil {
		return err
	}
	if err := printWaits(a.stdout, ws, counts, time.Now()); err != nil {
		return err
	}
	return printNotifications(a.stdout, notes)
}

// family is the task's parent and its current generation's children,
// each as one field's value ("" for none).
func family(parent *operator.Relative, children []operator.Relative, count int) (string, string) {
	var p string
	if parent != nil {
		p = fmt.Sprintf("task %d (%s, %s)", parent.ID, parent.Kind, parent.State)
	}
	if len(children) == 0 {
		return p, ""
	}
	shown := make([]string, 0, len(children))
	for _, c := range children {
		shown = append(shown, fmt.Sprintf("%d %s", c.ID, c.State))
	}
	more := ""
	if count > len(children) {
		more = fmt.Sprintf(" (the first %d of %d)", len(children), count)
	}
	return p, strings.Join(shown, ", ") + more
}

// printApprovals writes a task's approval requests and their decisions,
// newest first; nothing for a task that never asked.
func printApprovals(w io.Writer, rs []approvals.Request) error {
	if len(rs) == 0 {
		return nil
	}
	fmt.Fprintln(w, "Approvals:")
	tab := newTable(w, "ID", "GEN", "STEP", "CALL", "DECISION")
	for _, r := range rs {
		tab.row(strconv.FormatInt(r.ID, 10), strconv.Itoa(int(r.Generation)), r.Step, approvals.Summary(r), operator.Outcome(r))
	}
	return tab.flush()
}

// printNotifications writes a task's notification events, oldest first.
func printNotifications(w io.Writer, ns []notification) error {
	if len(ns) == 0 {
		_, err := fmt.Fprintln(w, "Notifications: none")
		return err
	}
	fmt.Fprintln(w, "Notifications:")
	tab := newTable(w, "ID", "GEN", "EVENT", "RULE/STEP", "CHANNEL", "STATE", "FAILURES", "DELIVERED", "LAST ERROR")
	for _, n := range ns {
		tab.row(strconv.FormatInt(n.ID, 10), strconv.Itoa(int(n.Generation)), n.Event, orDash(render.NotificationSource(n)), n.Channel,
			string(n.State), strconv.Itoa(int(n.Failures)), stampPtr(n.DeliveredAt), truncate(orDash(n.LastError), 60))
	}
	return tab.flush()
}

// printJournal writes the effects of a generation, in order; a
// compensation's row says which effect it undoes.
func printJournal(w io.Writer, generation int32, js []journalEntry) error {
	if len(js) == 0 {
		_, err := fmt.Fprintf(w, "Journal (generation %d): no effects\n", generation)
		return err
	}
	fmt.Fprintf(w, "Journal (generation %d):\n", generation)
	tab := newTable(w, "STEP", "OPERATION", "CLASS", "KEY", "STATE", "PERFORMED", "RESULT")
	for _, j := range js {
		tab.row(j.Step, j.Operation, string(j.Class), shortKey(j.Key), string(j.State), strconv.Itoa(int(j.Performed)),
			render.Summary(j, resultWidth))
	}
	return tab.flush()
}

// resultWidth is how much of a stored result a journal row shows.
const resultWidth = 60

// printTask writes a task and its attempts for people; the journal tells
// which step failed when the task compensates.
func printTask(w io.Writer, d *operator.Detail, now time.Time) error {
	t, atts, journal := d.Task, d.Attempts, d.Journal
	at := func(ts time.Time) string { return stamp(ts) + " (" + relative(ts, now) + ")" }
	fields := newTable(w)
	fields.row("Task:", strconv.FormatInt(t.ID, 10))
	fields.row("Tenant:", t.Tenant)
	fields.row("Queue:", t.Queue)
	fields.row("Kind:", t.Kind)
	fields.row("State:", string(t.State))
	if reason := render.Waiting(t); reason != "" {
		// A limit's wait; a daemon's has no end; a durable wait's reason
		// says its deadline already.
		switch {
		case !t.RunAt.After(now) || strings.Contains(reason, t.RunAt.UTC().Format("2006-01-02 15:04:05 UTC")):
		case strings.Contains(reason, "until closed"): // a breaker open by hand: its time is when it is looked at again
			reason += " (looked at again " + stamp(t.RunAt) + ")"
		default:
			reason += " (until " + stamp(t.RunAt) + ")"
		}
		fields.row("Waiting:", reason)
	}
	if len(t.Needs) > 0 {
		fields.row("Needs:", render.Needs(t.Needs))
	}
	fields.row("Priority:", strconv.Itoa(int(t.Priority)))
	fields.row("Attempt:", render.AttemptOf(t))
	fields.row("Generation:", strconv.Itoa(int(t.Generation)))
	if t.State.Finished() { // it will not run: no countdown
		fields.row("Run at:", stamp(t.RunAt))
	} else {
		fields.row("Run at:", at(t.RunAt))
	}
	fields.row("Created at:", at(t.CreatedAt))
	fields.row("Updated at:", at(t.UpdatedAt))
	fields.row("Finished at:", stampPtr(t.FinishedAt))
	fields.row("Idempotency key:", orDash(t.SubmissionKey))
	fields.row("Cancel requested:", stampPtr(t.CancelRequested))
	fields.row("Last error:", orDash(t.LastError))
	if c, ok := render.CompensationOf(t, atts, journal, d.CompensationRequestedBy); ok {
		// A finished compensation clears the last error: say what caused it.
		fields.row("Compensation:", c.String())
		if c.Error != "" && c.Error != t.LastError {
			fields.row("Failed with:", c.Error)
		}
	}
	parent, children := family(d.Parent, d.Children, d.ChildCount)
	if parent != "" {
		fields.row("Parent:", parent)
	}
	if children != "" {
		fields.row("Children:", children)
	}
	fields.row("Lease:", lease(t, now))
	if at := render.Progress(t, journal); at != "" {
		fields.row("Now at:", at)
	}
	if err := fields.flush(); err != nil {
		return err
	}
	for _, doc := range []struct {
		label string
		raw   json.RawMessage
	}{{"Payload:", t.Payload}, {"Result:", t.Result}} {
		if len(doc.raw) == 0 {
			fmt.Fprintln(w, doc.label, "-")
		} else {
			fmt.Fprintf(w, "%s\n%s\n", doc.label, pretty(doc.raw, "  "))
		}
	}
	if len(atts) == 0 {
		_, err := fmt.Fprintln(w, "Attempts: none")
		return err
	}
	// A replay or a retry runs the same generation from attempt 1 again,
	// and a deferral is not counted, so a number can repeat: the
	// generation and the fencing token tell them apart.
	deferred := ""
	if render.AnyDeferred(atts) {
		deferred = " (N): deferred, not counted;"
	}
	fmt.Fprintf(w, "Attempts (GEN: generation; a replay counts attempts from 1 again;%s TOKEN: the lease's fencing token):\n", deferred)
	tab := newTable(w, "GEN", "ATTEMPT", "WORKER", "TOKEN", "STARTED", "ENDED", "OUTCOME", "ERROR")
	for _, at := range atts {
		tab.row(strconv.Itoa(int(at.Generation)), render.AttemptNumber(at), at.Worker, strconv.FormatInt(at.Token, 10),
			stamp(at.StartedAt), stampPtr(at.EndedAt), render.AttemptOutcome(at), orDash(at.Error))
	}
	return tab.flush()
}

// lease describes the task's lease: who holds it, with which fencing token,
// until when.
func lease(t *agentledger.Task, now time.Time) string {
	l := render.LeaseOf(t, now)
	if l.None != "" {
		return l.None
	}
	exp := l.Expiry
	if l.Expired {
		exp += render.Claimable
	}
	return fmt.Sprintf("owner %s, fencing token %d, %s", l.Owner, l.Token, exp)
}
