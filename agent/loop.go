package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	openai "github.com/sashabaranov/go-openai"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/flow"
	"github.com/agentledger/agentledger/tools"
)

// Agent works tasks of kind "agent" (Kind). It is safe for concurrent use
// by many tasks.
type Agent struct {
	cfg    Config
	tools  *tools.Registry
	path   *tools.Path // every effect's: completions and tool calls
	target string      // of the model endpoint, for cfg.Gate
}

// New returns an Agent that asks the model configured by cfg (zero fields
// take their defaults), runs every effect through l (a *ledger.Ledger) and
// finds tools in reg (nil: no tools).
func New(cfg Config, l tools.Doer, reg *tools.Registry) *Agent {
	if reg == nil {
		reg = tools.NewRegistry()
	}
	a := &Agent{cfg: cfg.withDefaults(), tools: reg, path: cfg.Path}
	if a.path == nil {
		a.path = &tools.Path{Ledger: l, Tools: reg, Grants: cfg.Grants}
	}
	if u, err := url.Parse(a.cfg.BaseURL); err == nil && u.Host != "" {
		a.target = flow.Model(u.Hostname())
	} else {
		a.cfg.Gate = nil // no endpoint: every task fails before calling one
	}
	return a
}

// Answer is the result of a finished agent task.
type Answer struct {
	// Answer is the content of the model's final message.
	Answer string `json:"answer"`
	// Steps is the number of completions the conversation took.
	Steps int `json:"steps"`
	// FinishReason is the model's reason for ending the final message
	// ("stop", or "length" when it was cut short).
	FinishReason string `json:"finish_reason,omitempty"`
	// Usage sums the tokens of every completion of the conversation,
	// including those recorded by earlier attempts and served from the
	// ledger.
	Usage Usage `json:"usage"`
}

// Usage counts tokens as the model endpoint reported them.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

func (u *Usage) add(v Usage) {
	u.PromptTokens += v.PromptTokens
	u.CompletionTokens += v.CompletionTokens
	u.TotalTokens += v.TotalTokens
}

// Work runs the conversation of task from its first step; steps recorded by
// earlier attempts or runs of the same generation are served from the
// ledger. It returns the task's Answer as JSON, or an error:
// agentledger.Permanent for a bad payload, no endpoint (ErrNoEndpoint), a
// request the model endpoint rejects (4xx other than 408, 425, 429), a
// conversation that no longer matches its journal, no final answer within
// the step limit, or (*grants.DeniedError) a completion or tool call
// outside the tenant's grant in force at that effect or a prompt its token
// budget cannot hold; agentledger.RetryAfter when the endpoint asked to
// wait; ErrLeaseLost, ErrNeedsAttention and transient errors as they came.
// No error carries the API key.
func (a *Agent) Work(ctx context.Context, task *agentledger.Task) (json.RawMessage, error) {
	if a.cfg.BaseURL == "" {
		return nil, agentledger.Permanent(ErrNoEndpoint)
	}
	pl, err := a.parsePayload(task.Payload)
	if err != nil {
		return nil, err
	}
	specs, err := specsOf(pl.tools)
	if err != nil {
		return nil, agentledger.Permanent(fmt.Errorf("agent: %w", err))
	}
	msgs := opening(pl.system, pl.prompt)
	var used Usage
	for n := 0; n < pl.maxSteps; n++ {
		c, err := a.complete(ctx, task, n, chatRequest{Model: pl.model, Messages: msgs, Tools: specs}, used.TotalTokens)
		if err != nil {
			return nil, a.redact(stepError(n, err))
		}
		used.add(c.Usage)
		normalizeToolCalls(&c.Message)
		msgs = append(msgs, c.Message)
		if len(c.Message.ToolCalls) == 0 {
			if err := unanswered(n, c); err != nil {
				return nil, a.redact(err)
			}
			return json.Marshal(Answer{Answer: c.Message.Content, Steps: n + 1, FinishReason: c.FinishReason, Usage: used})
		}
		if n == pl.maxSteps-1 {
			// No completion may follow to read what the calls return: an
			// effect made now would be made for nothing.
			return nil, agentledger.Permanent(fmt.Errorf("agent: no final answer within max_steps=%d: "+
				"the model asked for %s at its last step; not called, as no completion could read the answer",
				pl.maxSteps, callNames(c.Message.ToolCalls)))
		}
		for _, call := range c.Message.ToolCalls {
			content, err := a.runTool(ctx, task, pl, n, call, c.Message.Content)
			if err != nil {
				return nil, a.redact(err)
			}
			msgs = append(msgs, message{Role: roleTool, Content: content, ToolCallID: call.ID})
		}
	}
	return nil, agentledger.Permanent(fmt.Errorf("agent: no final answer within max_steps=%d", pl.maxSteps))
}

// callNames lists the tools of calls for an error: "http_request and
// notify".
func callNames(calls []toolCall) string {
	names := make([]string, len(calls))
	for i, c := range calls {
		names[i] = strconv.Quote(c.Name)
	}
	if len(names) == 1 {
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// stepError says what a failed completion means for the task.
func stepError(n int, err error) error {
	var le *llmError
	switch {
	case errors.As(err, &le):
		if !le.transient {
			return agentledger.Permanent(err)
		}
		return err
	case errors.Is(err, agentledger.ErrKeyReuse):
		return agentledger.Permanent(fmt.Errorf("llm/%d: the conversation differs from the one recorded for this step "+
			"(the model, the prompt, or the tools or their schemas changed since); re-run the task as a new intent: %w", n, err))
	}
	return fmt.Errorf("llm/%d: %w", n, err)
}

// maxReason bounds the model's own words quoted in a task's error.
const maxReason = 500

// unanswered is why step n's final message c holds no answer, or nil. A
// refusal, an answer the endpoint's content filter withheld, or a message
// with neither text nor tool calls fails the task with that reason instead
// of succeeding with an empty answer. c is a recorded completion, so a
// replay fails the same way without asking the model again.
func unanswered(n int, c completion) error {
	switch {
	case c.Refusal != "":
		return agentledger.Permanent(fmt.Errorf("agent: llm/%d: the model refused: %s", n, clip(c.Refusal, maxReason)))
	case c.FinishReason == string(openai.FinishReasonContentFilter):
		return agentledger.Permanent(fmt.Errorf("agent: llm/%d: the endpoint's content filter withheld the answer "+
			"(finish_reason content_filter)", n))
	case strings.TrimSpace(c.Message.Content) == "":
		return agentledger.Permanent(fmt.Errorf("agent: llm/%d: the model answered with neither text nor tool calls "+
			"(finish_reason %q)", n, c.FinishReason))
	}
	return nil
}

// clip cuts s to at most n bytes, on a rune boundary, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
