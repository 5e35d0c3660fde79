package tools

import (
	"context"
	"fmt"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/ledger"
)

// The built-in stages of a Path, in order. Each passes an effect that is
// no tool's call (o.Tool nil once looked up: a model completion) through
// untouched; only the interceptors and the ledger see those.

// lookup finds the tool named o.ToolName when the kind has not.
func (p *Path) lookup(next Next) Next {
	return func(ctx context.Context, o *Outgoing) (ledger.Result, error) {
		if o.Tool == nil && o.ToolName != "" {
			t, err := p.Tools.Get(o.ToolName)
			if err != nil {
				return ledger.Result{}, err
			}
			o.Tool = t
		}
		return next(ctx, o)
	}
}

// grant reads the grant in force now and checks the call against it:
// a call outside the grant records and performs nothing, on a replay too.
func (p *Path) grant(next Next) Next {
	return func(ctx context.Context, o *Outgoing) (ledger.Result, error) {
		if o.Tool == nil {
			return p.allow(ctx, o, next)
		}
		if p.Grants != nil {
			g, err := p.Grants.For(ctx, o.Task.Tenant)
			if err != nil {
				return ledger.Result{}, fmt.Errorf("%s at %s: %w", o.Tool.Name(), o.StepPath, err)
			}
			o.Grant = g
		}
		if err := Permit(o.Tool, o.Call); err != nil {
			return ledger.Result{}, fmt.Errorf("%s at %s: %w", o.Tool.Name(), o.StepPath, err)
		}
		return next(ctx, o)
	}
}

// allow is the grant stage of an effect that is no tool's call.
func (p *Path) allow(ctx context.Context, o *Outgoing, next Next) (ledger.Result, error) {
	if o.Allow == nil {
		return next(ctx, o)
	}
	g := o.Grant
	if p.Grants != nil {
		var err error
		if g, err = p.Grants.For(ctx, o.Task.Tenant); err != nil {
			return ledger.Result{}, err
		}
	}
	if err := o.Allow(g); err != nil {
		return ledger.Result{}, err
	}
	return next(ctx, o)
}

// effect has the tool build its ledger effect from the call; a tool that
// books on the fleet's limits sets the effect's Admit (Gated), which the
// ledger asks only when it performs.
func (p *Path) effect(next Next) Next {
	return func(ctx context.Context, o *Outgoing) (ledger.Result, error) {
		if o.Tool == nil {
			return next(ctx, o)
		}
		eff, err := o.Tool.Effect(o.Call)
		if err != nil {
			return ledger.Result{}, fmt.Errorf("%s at %s: %w", o.Tool.Name(), o.StepPath, err)
		}
		if eff.StepPath == "" {
			eff.StepPath = o.StepPath
		}
		if err := CheckCompensable(o.Tool, o.Call, eff); err != nil {
			return ledger.Result{}, err
		}
		eff.Compensate = o.Compensate
		o.Effect = eff
		return next(ctx, o)
	}
}

// flow admits an effect that names its target against the fleet's limits
// and breakers: Gated makes its Admit, which the ledger asks only when it
// performs (never for an outcome it serves), and its Perform, which tells
// the target's breaker how the call went. A local effect commits with its
// row and reaches nothing; an effect whose kind admits it itself (Admit
// set) is left as it is.
func (p *Path) flow(next Next) Next {
	if p.Gate == nil {
		return next
	}
	return func(ctx context.Context, o *Outgoing) (ledger.Result, error) {
		if e := &o.Effect; e.Target != "" && e.Class != ledger.Local && e.Admit == nil {
			e.Admit, e.Perform = Gated(p.Gate, e.Target, e.Hold, e.Class, e.Perform)
		}
		return next(ctx, o)
	}
}

// perform is the last stage: the ledger.
func (p *Path) perform(ctx context.Context, o *Outgoing) (ledger.Result, error) {
	if o.Task == nil {
		return ledger.Result{}, agentledger.Permanent(fmt.Errorf("tools: effect at %s has no task", o.StepPath))
	}
	return p.Ledger.Do(ctx, AttemptOf(o.Task), o.Effect)
}
