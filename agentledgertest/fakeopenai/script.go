package fakeopenai

import "time"

// Reply is one scripted answer to one request. A zero Status answers 200
// with an assistant message; any other Status answers with an OpenAI error
// body instead.
type Reply struct {
	// Content is the assistant's text.
	Content string
	// ToolCalls are the calls the assistant asks for.
	ToolCalls []ToolCall
	// FinishReason defaults to "tool_calls" when there are tool calls and
	// "stop" otherwise.
	FinishReason string
	// PromptTokens and CompletionTokens are reported as usage.
	PromptTokens, CompletionTokens int

	// Status, when not 0 or 200, makes the reply an error with this status.
	Status int
	// Message is the error's message (default: the status text).
	Message string
	// EchoAuth appends the request's Authorization header to the error
	// message, as a careless server might: for proving that clients keep
	// such text out of their records.
	EchoAuth bool
	// RetryAfter is sent as the Retry-After header when not empty.
	RetryAfter string

	// Delay holds the answer back this long, or until the client gives up.
	Delay time.Duration
}

// ToolCall is one tool call of a scripted assistant message.
type ToolCall struct {
	ID        string
	Name      string
	Arguments string
}

// Text is a reply with the assistant text s.
func Text(s string) Reply { return Reply{Content: s} }

// Calls is a reply asking for tool calls.
func Calls(calls ...ToolCall) Reply { return Reply{ToolCalls: calls} }

// Fail is an error reply with status and message.
func Fail(status int, message string) Reply { return Reply{Status: status, Message: message} }
