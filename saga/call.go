package saga

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/tools"
)

type invokerKey struct{}

// Call performs tool with args for task t through the ledger, at journal
// place "call/<path>" — the same path for the same intended call on every
// attempt and replay (a step name, "charge", "notify/3"; printable, not
// starting with "/"), never a time or an attempt number. undo, if not
// nil, is its compensation (a call that changes something: a pure tool or
// a GET is refused): if t later
// ends dead or is cancelled, the call, once completed, is undone with it.
//
// It is how a Go kind (daemon.Kind) performs effects: ctx must be the
// handler's own, in which the daemon puts its ledger, tools and grants. A
// call served from the ledger (done by an earlier attempt) performs
// nothing and has Result.Replayed set.
func Call(ctx context.Context, t *agentledger.Task, path, tool string, args any, undo *Compensation) (ledger.Result, error) {
	u, ok := ctx.Value(invokerKey{}).(*Undoer)
	if !ok {
		return ledger.Result{}, agentledger.Permanent(errors.New("saga.Call: ctx is not a task handler's: call it from a kind the daemon runs, with the ctx it was given"))
	}
	if t == nil {
		return ledger.Result{}, agentledger.Permanent(errors.New("saga.Call: no task: pass the task the handler was given"))
	}
	// The path is the journal's place for the call, shown by agentctl
	// and the console: printable. (Its length is the ledger's to bound.)
	if path == "" || strings.HasPrefix(path, "/") || !utf8.ValidString(path) || strings.ContainsFunc(path, unicode.IsControl) {
		return ledger.Result{}, agentledger.Permanent(fmt.Errorf("saga.Call: path %q must name the call (\"charge\", \"step/2\"): "+
			"printable, not starting with /", path))
	}
	raw, err := json.Marshal(args)
	if err != nil {
		return ledger.Result{}, agentledger.Permanent(fmt.Errorf("saga.Call %s: arguments: %w", path, err))
	}
	if References(raw) {
		return ledger.Result{}, agentledger.Permanent(fmt.Errorf("saga.Call %s: ${self…} may be used only in a compensation", path))
	}
	call := tools.Call{Task: t, StepPath: "call/" + path, Args: raw}
	if undo != nil {
		if call.Compensate, err = undo.Encode(); err != nil {
			return ledger.Result{}, agentledger.Permanent(fmt.Errorf("saga.Call %s: %w", path, err))
		}
		// A compensation calling a tool that does not exist would be
		// found out only when the effect has to be undone: refused now,
		// before the effect. (One of an MCP server not connected for now
		// is taken: it is looked up when it runs.)
		var ut tools.Tool
		if reg := u.path().Tools; reg != nil {
			if ut, err = reg.Get(undo.Tool); err != nil && errors.As(err, new(*agentledger.PermanentError)) {
				return ledger.Result{}, agentledger.Permanent(fmt.Errorf("saga.Call %s: its compensation: %w", path, err))
			}
		}
		// Nor one that changes nothing: the task would end compensated
		// with its effect in place (a steps payload's is refused at
		// submit).
		if tools.IsPure(ut) || tools.PureHTTP(undo.Tool, undo.Args) {
			return ledger.Result{}, agentledger.Permanent(fmt.Errorf("saga.Call %s: its compensation: %s changes nothing, so it undoes nothing: "+
				"compensate with a call that does", path, undo.Tool))
		}
	}
	// The path reads the grant in force now: a revoke stops the kind's
	// next call.
	o := &tools.Outgoing{ToolName: tool, Call: call}
	res, err := u.path().Perform(ctx, o)
	switch {
	case err != nil && o.Tool == nil: // the lookup failed: no such tool
		return res, fmt.Errorf("saga.Call %s: %w", path, err)
	case errors.Is(err, agentledger.ErrKeyReuse):
		// Retrying cannot change the recorded request: the kind's code
		// sends another at this place (a place used twice, or code that
		// changed under a replay).
		return res, agentledger.Permanent(fmt.Errorf("saga.Call %s (%s): the call differs from the one recorded at this "+
			"place; give each call its own path, or re-run the task as a new intent: %w", path, tool, err))
	}
	return res, err
}
