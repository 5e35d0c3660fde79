// Package mcptools makes the tools of an MCP server (Model Context
// Protocol, through the official Go SDK) tools of agentledger: every call
// is a journaled effect through the ledger, under a deterministic key.
//
// A tool's class comes from its annotations: readOnlyHint → pure (looked up
// again freely); idempotentHint → keyed (sent again with the same arguments
// and key when its outcome is unknown); anything else, or no annotations →
// unsafe (an unknown outcome parks the task for an operator, never sent
// again blindly). Options.Classes overrides it per tool. The ledger key
// travels to the server in the call's _meta under KeyMeta, so a server can
// deduplicate; a replay of a finished task calls no server at all.
package mcptools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/argschema"
	"github.com/agentledger/agentledger/flow"
	"github.com/agentledger/agentledger/internal/version"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/tools"
)

// KeyMeta is the _meta field of a tool call that carries its ledger key.
const KeyMeta = "agentledger/effect-key"

// Options tune a server's tools.
type Options struct {
	// Classes overrides the class of tools by their name on the server.
	Classes map[string]ledger.Class
	// CallTimeout bounds one call; default 60s.
	CallTimeout time.Duration
}

// CheckServerName refuses a server name its tools cannot be named under:
// "name/tool" in steps, grants and limits (mcp:name), and "name__tool"
// as a model calls a function, which takes ASCII letters, digits, _ and
// - only. Without "__" and no trailing _, no two servers' tools share a
// function name.
func CheckServerName(name string) error {
	ok := len(name) >= 1 && len(name) <= 64 && !strings.Contains(name, "__") && !strings.HasSuffix(name, "_") &&
		!strings.ContainsFunc(name, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-')
		})
	if !ok {
		return fmt.Errorf(`MCP server name %q must be 1-64 letters, digits, _ or -, without "__" and not ending in _ `+
			"(a model calls its tools name__tool)", name)
	}
	return nil
}

// Server is a connected MCP server and its tools.
type Server struct {
	name    string
	session *mcp.ClientSession
	tools   []tools.Tool
}

// Connect opens a session with the server called name over t and reads its
// tools. The name prefixes its tools ("name/tool"). A *mcp.CommandTransport's
// command is run over this package's own stdio connection (commandTransport),
// and a session over a stream of its own uses the stateful protocol
// (statefulVersion): both cut what a call costs, not what it does.
func Connect(ctx context.Context, name string, t mcp.Transport, o Options) (*Server, error) {
	if err := CheckServerName(name); err != nil {
		return nil, fmt.Errorf("mcptools: %w", err)
	}
	if o.CallTimeout <= 0 {
		o.CallTimeout = time.Minute
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "agentledger", Version: version.String()}, nil)
	if ct, ok := t.(*mcp.CommandTransport); ok {
		t = &commandTransport{cmd: ct.Command, terminate: ct.TerminateDuration}
	}
	session, err := client.Connect(ctx, t, sessionOptions(t))
	if err != nil {
		return nil, fmt.Errorf("mcp server %s: connect: %w", name, err)
	}
	s := &Server{name: name, session: session}
	for mt, err := range session.Tools(ctx, nil) {
		if err != nil {
			session.Close()
			return nil, fmt.Errorf("mcp server %s: list tools: %w", name, err)
		}
		tl, err := s.tool(mt, o)
		if err != nil {
			session.Close()
			return nil, err
		}
		s.tools = append(s.tools, tl)
	}
	return s, nil
}

// statefulVersion is the protocol version Connect asks of a server over a
// stream of its own (a command's stdio, in memory): the latest version
// with a session. The SDK's default, 2026-07-28, is stateless: every call
// carries the client's version, info and capabilities in _meta, which the
// server decodes and checks again on every call — for a connection that
// is one session anyway. A server that speaks only that version still
// answers with it, and the session uses it.
const statefulVersion = "2025-11-25"

// sessionOptions are the session's options over transport t.
func sessionOptions(t mcp.Transport) *mcp.ClientSessionOptions {
	switch t.(type) {
	case *commandTransport, *mcp.CommandTransport, *mcp.IOTransport, *mcp.InMemoryTransport:
		return &mcp.ClientSessionOptions{ProtocolVersion: statefulVersion}
	}
	return nil
}

// Tools are the server's tools, named "server/tool".
func (s *Server) Tools() []tools.Tool { return s.tools }

// Close ends the session (and a stdio server's process).
func (s *Server) Close() error { return s.session.Close() }

// Wait returns when the session ends: the server closed it, or its process
// exited.
func (s *Server) Wait() error { return s.session.Wait() }

// CallClass reports whether an MCP call may be of class c: pure, keyed or
// unsafe (a call has no look-up for reconcilable, and is not local).
func CallClass(c ledger.Class) bool {
	return c == ledger.Pure || c == ledger.Keyed || c == ledger.Unsafe
}

// ClassOf is the class a tool's annotations allow.
func ClassOf(a *mcp.ToolAnnotations) ledger.Class {
	switch {
	case a == nil:
		return ledger.Unsafe
	case a.ReadOnlyHint:
		return ledger.Pure
	case a.IdempotentHint:
		return ledger.Keyed
	}
	return ledger.Unsafe
}

func (s *Server) tool(mt *mcp.Tool, o Options) (tools.Tool, error) {
	class := ClassOf(mt.Annotations)
	if c, ok := o.Classes[mt.Name]; ok {
		if !CallClass(c) {
			return nil, fmt.Errorf("mcp server %s: tool %s: class %q: an MCP call is pure, keyed or unsafe", s.name, mt.Name, c)
		}
		class = c
	}
	schema, err := json.Marshal(mt.InputSchema)
	if err != nil || string(schema) == "null" {
		schema = json.RawMessage(`{"type":"object"}`)
	}
	checked, err := argschema.Parse(schema)
	if err != nil {
		return nil, fmt.Errorf("mcp server %s: tool %s: its input schema: %w", s.name, mt.Name, err)
	}
	return &tool{server: s, name: mt.Name, description: mt.Description, class: class, schema: checked,
		timeout: o.CallTimeout}, nil
}

// tool is one MCP tool as an agentledger tool.
type tool struct {
	server      *Server
	name        string
	description string
	class       ledger.Class
	schema      *argschema.Schema
	timeout     time.Duration
}

func (t *tool) Name() string                { return t.server.name + "/" + t.name }
func (t *tool) Description() string         { return t.description }
func (t *tool) Parameters() json.RawMessage { return t.schema.JSON() }

// MCPServer names the tool's server on its spans (tools.MCPTool).
func (t *tool) MCPServer() string { return t.server.name }

// Class is the tool's class, from its annotations or the configuration.
func (t *tool) Class() ledger.Class { return t.class }

// Effect checks the arguments against the tool's schema (a mismatch is
// permanent: the model gets it back as the tool's result) and returns the
// call as an effect of the tool's class.
func (t *tool) Effect(call tools.Call) (ledger.Effect, error) {
	args := call.Args
	if len(args) == 0 {
		args = json.RawMessage(`{}`)
	}
	if err := t.schema.Check("arguments", args); err != nil {
		return ledger.Effect{}, agentledger.Permanent(fmt.Errorf("%s: %w", t.Name(), err))
	}
	eff := ledger.Effect{
		Operation: "mcp." + t.server.name + "." + t.name,
		StepPath:  call.StepPath,
		Class:     t.class,
		Request:   args,
		Perform:   func(ctx context.Context, c ledger.Call) (ledger.Result, error) { return t.call(ctx, c, args) },
	}
	eff.Target, eff.Hold = flow.MCP(t.server.name), t.timeout // admitted by the effect path's flow stage
	return eff, nil
}

// call sends the call with its key in _meta. A tool error (isError) is the
// tool's answer, recorded as a permanent failure; a transport error leaves
// the outcome unknown, for the ledger to settle by the tool's class.
func (t *tool) call(ctx context.Context, c ledger.Call, args json.RawMessage) (ledger.Result, error) {
	ctx, cancel := context.WithTimeout(ctx, t.timeout)
	defer cancel()
	res, err := t.server.session.CallTool(ctx, &mcp.CallToolParams{Name: t.name, Arguments: args,
		Meta: mcp.Meta{KeyMeta: c.Key}})
	if err != nil {
		return ledger.Result{}, fmt.Errorf("mcp server %s: tool %s: %w", t.server.name, t.name, err)
	}
	body, text := resultBody(res)
	if res.IsError {
		return ledger.Result{}, agentledger.Permanent(errors.New(t.Name() + ": " + text))
	}
	return ledger.Result{Body: body}, nil
}

// resultBody is the call's structured content, or its text as a JSON
// string; text is the text content for messages.
func resultBody(res *mcp.CallToolResult) (json.RawMessage, string) {
	var texts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			texts = append(texts, tc.Text)
		}
	}
	text := strings.Join(texts, "\n")
	if res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			return b, text
		}
	}
	b, _ := json.Marshal(text) // a string always encodes
	return b, text
}
