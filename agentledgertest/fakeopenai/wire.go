package fakeopenai

import (
	"encoding/json"
	"fmt"
	"net/http"
)

// wireCall is a tool call as the API spells it.
type wireCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// UnmarshalJSON reads a tool call in the API's nested form.
func (c *ToolCall) UnmarshalJSON(b []byte) error {
	var w wireCall
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*c = ToolCall{ID: w.ID, Name: w.Function.Name, Arguments: w.Function.Arguments}
	return nil
}

// completion is the 200 answer to request n. A max_tokens below the
// reply's CompletionTokens cuts the answer there, as a model stops at it:
// the usage reports max_tokens and finish_reason "length".
func completion(n int, model string, maxTokens int, r Reply) map[string]any {
	msg := map[string]any{"role": "assistant", "content": r.Content}
	finish := r.FinishReason
	if maxTokens > 0 && r.CompletionTokens > maxTokens {
		r.CompletionTokens, finish = maxTokens, "length"
	}
	if len(r.ToolCalls) > 0 {
		calls := make([]wireCall, len(r.ToolCalls))
		for i, c := range r.ToolCalls {
			calls[i].ID, calls[i].Type = c.ID, "function"
			calls[i].Function.Name, calls[i].Function.Arguments = c.Name, c.Arguments
		}
		msg["tool_calls"] = calls
		if r.Content == "" {
			msg["content"] = nil
		}
		if finish == "" {
			finish = "tool_calls"
		}
	}
	if finish == "" {
		finish = "stop"
	}
	return map[string]any{
		"id":      fmt.Sprintf("chatcmpl-fake-%d", n),
		"object":  "chat.completion",
		"created": 1700000000,
		"model":   model,
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}},
		"usage": map[string]int{
			"prompt_tokens":     r.PromptTokens,
			"completion_tokens": r.CompletionTokens,
			"total_tokens":      r.PromptTokens + r.CompletionTokens,
		},
	}
}

// writeError answers with an OpenAI error body.
func writeError(w http.ResponseWriter, status int, msg, typ string) {
	writeJSON(w, status, map[string]any{"error": map[string]any{"message": msg, "type": typ, "code": nil}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v) // the client may be gone; nothing to do then
}
