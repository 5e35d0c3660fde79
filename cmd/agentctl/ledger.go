package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/operator"
	"github.com/agentledger/agentledger/render"
)

// maxLedgerLimit is the most effects one ledger look-up returns
// (ledger.Find's cap).
const maxLedgerLimit = 1000

// ledgerFlags are the options of agentctl ledger as given.
type ledgerFlags struct {
	key, operation, tenant string
	task, before           int64
	limit                  int
}

func (a *app) ledgerCmd() *cobra.Command {
	var f ledgerFlags
	cmd := &cobra.Command{
		Use:   "ledger (--key K | --task ID | --operation OP) [--tenant T] [--limit N] [--before SEQ]",
		Short: "Look effects up in the dedupe ledger",
		Long: `Look effects up in the dedupe ledger, newest first, across tasks and
generations: by effect key or a prefix of one (at least 6 characters, as
agentctl show prints them), by task, by operation (http_request, llm.chat,
notify.post, …), narrowed by tenant. Give at least one of --key, --task and
--operation (exit 2 otherwise); several narrow the look-up together.

Each line is one effect: its task and generation, its step, operation and
class, its state, how many times it was performed, its key (the first 12
characters) and a summary of its stored result or its error. When the page
is full, a note on stderr gives the --before that shows the next one.

With --output json it prints an array of the full entries; each one's seq
orders the ledger, and a page's last seq is the next page's --before.`,
		Example: `  agentctl ledger --task 42
  agentctl ledger --key 3f9a1c0b77e2
  agentctl ledger --operation http_request --tenant acme --limit 200 -o json`,
		Args: cobra.NoArgs,
		RunE: a.action(func(ctx context.Context, _ []string) error { return a.ledgerFind(ctx, &f) }),
	}
	fl := cmd.Flags()
	fl.StringVar(&f.key, "key", "", "effect key, or a prefix of one (at least 6 characters)")
	fl.Int64Var(&f.task, "task", 0, "effects of this task (every generation)")
	fl.StringVar(&f.operation, "operation", "", "effects of this operation, e.g. http_request")
	tenantFlag(cmd, &f.tenant, "only effects of this tenant")
	fl.IntVar(&f.limit, "limit", 50, "at most this many effects (1.."+strconv.Itoa(maxLedgerLimit)+")")
	fl.Int64Var(&f.before, "before", 0, "only effects older than the one of this seq: the next page, from a full page's note")
	return cmd
}

// foundEffect is one effect as agentctl ledger prints it in JSON.
type foundEffect struct {
	TaskID     int64  `json:"task_id"`
	Generation int32  `json:"generation"`
	Tenant     string `json:"tenant"`
	Seq        int64  `json:"seq"`
	journalEntry
	OwnerToken  int64      `json:"owner_token"`
	CreatedAt   time.Time  `json:"created_at"`
	UpdatedAt   time.Time  `json:"updated_at"`
	CompletedAt *time.Time `json:"completed_at,omitempty"`
}

// params checks the flags and turns them into look-up parameters.
func (f *ledgerFlags) params() (ledger.FindParams, error) {
	p := ledger.FindParams{Key: f.key, TaskID: f.task, Operation: f.operation, Tenant: f.tenant, Limit: f.limit, Before: f.before}
	switch {
	case f.key == "" && f.task == 0 && f.operation == "":
		return p, usagef("give at least one of --key, --task and --operation")
	case f.task < 0:
		return p, usagef("--task must be a task id, not %d", f.task)
	case f.key != "" && utf8.RuneCountInString(f.key) < 6:
		return p, usagef("--key %q is too short a prefix: give at least 6 characters", f.key)
	case f.before < 0:
		return p, usagef("--before must be a seq from a page of effects, not %d", f.before)
	case f.limit < 1 || f.limit > maxLedgerLimit:
		return p, usagef("--limit must be between 1 and %d, not %d", maxLedgerLimit, f.limit)
	}
	return p, nil
}

func (a *app) ledgerFind(ctx context.Context, f *ledgerFlags) error {
	p, err := f.params()
	if err != nil {
		return err
	}
	if _, err := a.store(ctx); err != nil {
		return err
	}
	found, err := ledger.New(a.db.Pool).Find(ctx, p)
	var ie *agentledger.InvalidError
	if errors.As(err, &ie) {
		return agentledger.Invalid("--"+ie.Field, "%s", ie.Problem)
	}
	if err != nil {
		return err
	}
	out := make([]foundEffect, len(found))
	for i, e := range found {
		out[i] = foundEffect{TaskID: e.TaskID, Generation: e.Generation, Tenant: e.Tenant, Seq: e.Seq,
			journalEntry: operator.EffectOf(e.Entry), OwnerToken: e.OwnerToken,
			CreatedAt: e.CreatedAt, UpdatedAt: e.UpdatedAt, CompletedAt: e.CompletedAt}
	}
	if a.wantJSON() {
		return printJSON(a.stdout, out)
	}
	if len(out) == 0 {
		_, err := fmt.Fprintln(a.stderr, "no effects match")
		return err
	}
	t := newTable(a.stdout, "TASK", "GEN", "STEP", "OPERATION", "CLASS", "STATE", "PERFORMED", "KEY", "RESULT")
	for _, e := range out {
		t.row(strconv.FormatInt(e.TaskID, 10), strconv.Itoa(int(e.Generation)), e.Step, e.Operation, string(e.Class),
			string(e.State), strconv.Itoa(int(e.Performed)), shortKey(e.Key), truncate(render.Outcome(e.journalEntry, 60), 80))
	}
	if err := t.flush(); err != nil {
		return err
	}
	if len(out) == p.Limit {
		fmt.Fprintf(a.stderr, "more effects may match: add --before %d for the next %d\n", out[len(out)-1].Seq, p.Limit)
	}
	return nil
}
