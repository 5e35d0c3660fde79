package main

import (
	"encoding/json"
	"fmt"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/saga"
)

// compensationKey holds how agent tasks undo tools' calls: an array of
// tables.
const compensationKey = "compensation"

// fileCompensation is one [[compensation]] table: how agent tasks undo a
// call of a tool.
type fileCompensation struct {
	Tool string         `toml:"tool"`
	Undo string         `toml:"undo"`
	Args map[string]any `toml:"args"`
}

// compensationsFromFile reads and checks the [[compensation]] tables. The
// tools are looked up when a task uses them: an MCP server's tools are
// known only once it is connected.
func compensationsFromFile(path string) (map[string]saga.Compensation, error) {
	var f fileTables
	if _, err := decodeFile(path, &f); err != nil {
		return nil, err
	}
	if len(f.Compensations) == 0 {
		return nil, nil
	}
	out := make(map[string]saga.Compensation, len(f.Compensations))
	for i, fc := range f.Compensations {
		c, err := fc.compensation()
		if _, dup := out[fc.Tool]; err == nil && dup {
			err = agentledger.Invalid("tool", "%s has another [[compensation]] table", fc.Tool)
		}
		if err != nil {
			return nil, fmt.Errorf("config file %s: compensation[%d] (tool %q): %w", path, i, fc.Tool, err)
		}
		out[fc.Tool] = c
	}
	return out, nil
}

// compensation checks one table; errors name its key at fault.
func (fc fileCompensation) compensation() (saga.Compensation, error) {
	switch {
	case fc.Tool == "":
		return saga.Compensation{}, agentledger.Invalid("tool", "name the tool whose calls are undone")
	case fc.Undo == "":
		return saga.Compensation{}, agentledger.Invalid("undo", "name the tool that undoes a call of %s", fc.Tool)
	}
	c := saga.Compensation{Tool: fc.Undo}
	if fc.Args != nil {
		args, err := json.Marshal(fc.Args)
		if err != nil {
			return c, agentledger.Invalid("args", "%v", err)
		}
		c.Args = args
	}
	if err := c.Check(); err != nil {
		return c, agentledger.Invalid("args", "%v", err)
	}
	return c, nil
}
