package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	openai "github.com/sashabaranov/go-openai"

	"github.com/agentledger/agentledger/tools"
)

// The chat roles the conversation uses.
const (
	roleSystem    = openai.ChatMessageRoleSystem
	roleUser      = openai.ChatMessageRoleUser
	roleAssistant = openai.ChatMessageRoleAssistant
	roleTool      = openai.ChatMessageRoleTool
)

// message is one chat message as journaled: the ledger request of a step
// holds these, and the result of a step holds the assistant's. Only strings
// and fixed field order, so its JSON is the same every time it is built.
type message struct {
	Role       string     `json:"role"`
	Content    string     `json:"content,omitempty"`
	ToolCalls  []toolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
}

// toolCall is one call the model asked for.
type toolCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// toolSpec is a tool as offered to the model.
type toolSpec struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters"`
}

// chatRequest is the ledger request of one completion: everything that
// decides the model's answer, and nothing secret (no API key, no URL).
type chatRequest struct {
	Model    string     `json:"model"`
	Messages []message  `json:"messages"`
	Tools    []toolSpec `json:"tools,omitempty"`
	// MaxTokens is sent as max_tokens (0: none) but is not part of the
	// ledger request: it only bounds how long the answer may be, from the
	// task's budget and what it spent, so a replay is served the recorded
	// answer whatever limit it was made under — one recorded before limits
	// were sent, or under a budget changed since — as the first result of
	// any pure effect stands.
	MaxTokens int `json:"-"`
}

// completion is the ledger result body of one completion: what the loop
// needs to go on, and the token usage for operators.
type completion struct {
	ID           string  `json:"id,omitempty"`
	Model        string  `json:"model,omitempty"`
	Message      message `json:"message"`
	FinishReason string  `json:"finish_reason"`
	// Refusal is the model's refusal to answer (OpenAI's "refusal" field),
	// which comes with no content.
	Refusal string `json:"refusal,omitempty"`
	Usage   Usage  `json:"usage"`
}

// emptySchema is offered for a tool that declares no parameters.
var emptySchema = json.RawMessage(`{"type":"object","properties":{}}`)

// functionName is a tool's name as models may call a function: letters,
// digits, _ and - only, so an MCP tool "server/tool" is "server__tool".
func functionName(tool string) string { return strings.ReplaceAll(tool, "/", "__") }

// specsOf describes ts for the model, in order.
func specsOf(ts []tools.Tool) ([]toolSpec, error) {
	out := make([]toolSpec, 0, len(ts))
	for _, t := range ts {
		params := t.Parameters()
		if len(params) == 0 {
			params = emptySchema
		}
		if !json.Valid(params) {
			return nil, fmt.Errorf("tool %q: its parameter schema is not valid JSON", t.Name())
		}
		out = append(out, toolSpec{Name: functionName(t.Name()), Description: t.Description(), Parameters: params})
	}
	return out, nil
}

// opening is the conversation before the model's first answer.
func opening(system, prompt string) []message {
	var msgs []message
	if system != "" {
		msgs = append(msgs, message{Role: roleSystem, Content: system})
	}
	return append(msgs, message{Role: roleUser, Content: prompt})
}

// normalizeToolCalls gives every call of m an id usable in a step path:
// an id the model left empty, repeated within the message, or longer than
// maxToolCallID becomes "call_<i>" (with "_" appended while taken). The
// change is a function of the recorded completion only, so every replay
// makes the same one.
func normalizeToolCalls(m *message) {
	seen := make(map[string]bool, len(m.ToolCalls))
	for i := range m.ToolCalls {
		c := &m.ToolCalls[i]
		if c.ID == "" || seen[c.ID] || len(c.ID) > maxToolCallID {
			c.ID = fmt.Sprintf("call_%d", i)
			for seen[c.ID] {
				c.ID += "_"
			}
		}
		seen[c.ID] = true
	}
}

// maxToolCallID bounds a tool call id taken into a step path.
const maxToolCallID = 128

// toOpenAI is req as go-openai sends it.
func (req chatRequest) toOpenAI() openai.ChatCompletionRequest {
	out := openai.ChatCompletionRequest{Model: req.Model, Messages: make([]openai.ChatCompletionMessage, 0, len(req.Messages))}
	if req.MaxTokens > 0 {
		if takesMaxTokens(req.Model) {
			out.MaxTokens = req.MaxTokens
		} else {
			out.MaxCompletionTokens = req.MaxTokens
		}
	}
	for _, m := range req.Messages {
		om := openai.ChatCompletionMessage{Role: m.Role, Content: m.Content, ToolCallID: m.ToolCallID}
		for _, c := range m.ToolCalls {
			om.ToolCalls = append(om.ToolCalls, openai.ToolCall{ID: c.ID, Type: openai.ToolTypeFunction,
				Function: openai.FunctionCall{Name: c.Name, Arguments: c.Arguments}})
		}
		out.Messages = append(out.Messages, om)
	}
	for _, t := range req.Tools {
		out.Tools = append(out.Tools, openai.Tool{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{
			Name: t.Name, Description: t.Description, Parameters: t.Parameters}})
	}
	return out
}

// completionOf is what the loop keeps of a go-openai response.
func completionOf(resp openai.ChatCompletionResponse) completion {
	ch := resp.Choices[0]
	m := message{Role: roleAssistant, Content: storable(ch.Message.Content)}
	for _, c := range ch.Message.ToolCalls {
		m.ToolCalls = append(m.ToolCalls, toolCall{ID: storable(c.ID), Name: storable(c.Function.Name),
			Arguments: storable(c.Function.Arguments)})
	}
	return completion{
		ID: storable(resp.ID), Model: storable(resp.Model), Message: m, FinishReason: storable(string(ch.FinishReason)),
		Refusal: storable(ch.Message.Refusal),
		Usage: Usage{
			PromptTokens:     resp.Usage.PromptTokens,
			CompletionTokens: resp.Usage.CompletionTokens,
			TotalTokens:      resp.Usage.TotalTokens,
		},
	}
}

// storable replaces NUL characters, which a PostgreSQL jsonb value cannot
// hold, so that every completion can be recorded.
func storable(s string) string { return strings.ReplaceAll(s, "\x00", "\uFFFD") }

// takesMaxTokens reports whether a budget's limit goes to model as
// max_tokens, which every OpenAI-compatible server reads (Ollama and older
// llama.cpp ignore max_completion_tokens, which would leave the budget
// unenforced). OpenAI's reasoning models refuse it and take
// max_completion_tokens instead; go-openai's own validator knows which
// models those are, so it is asked rather than a list kept here.
func takesMaxTokens(model string) bool {
	probe := openai.ChatCompletionRequest{Model: model, MaxTokens: 1}
	return !errors.Is(openai.NewReasoningValidator().Validate(probe), openai.ErrReasoningModelMaxTokensDeprecated)
}
