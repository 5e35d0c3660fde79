package fakeopenai_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
	"go.uber.org/goleak"

	"github.com/agentledger/agentledger/agentledgertest/fakeopenai"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const key = "sk-fake-key-for-tests"

func client(s *fakeopenai.Server, key string) *openai.Client {
	cfg := openai.DefaultConfig(key)
	cfg.BaseURL = s.BaseURL()
	cfg.HTTPClient = s.Client()
	return openai.NewClientWithConfig(cfg)
}

func ask(ctx context.Context, c *openai.Client) (openai.ChatCompletionResponse, error) {
	return c.CreateChatCompletion(ctx, openai.ChatCompletionRequest{
		Model:    "m",
		Messages: []openai.ChatCompletionMessage{{Role: "user", Content: "hi"}},
		Tools: []openai.Tool{{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{
			Name: "echo", Parameters: map[string]any{"type": "object"}}}},
	})
}

func TestScriptServedInOrder(t *testing.T) {
	t.Parallel()
	s := fakeopenai.New(t, key,
		fakeopenai.Calls(fakeopenai.ToolCall{ID: "c1", Name: "echo", Arguments: `{"x":1}`}),
		fakeopenai.Reply{Content: "done", PromptTokens: 3, CompletionTokens: 2})
	c := client(s, key)
	r1, err := ask(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	tc := r1.Choices[0].Message.ToolCalls
	if len(tc) != 1 || tc[0].ID != "c1" || tc[0].Function.Name != "echo" || tc[0].Function.Arguments != `{"x":1}` ||
		r1.Choices[0].FinishReason != openai.FinishReasonToolCalls {
		t.Fatalf("first reply %+v", r1.Choices[0])
	}
	r2, err := ask(context.Background(), c)
	if err != nil || r2.Choices[0].Message.Content != "done" || r2.Usage.TotalTokens != 5 ||
		r2.Choices[0].FinishReason != openai.FinishReasonStop {
		t.Fatalf("second reply %+v %v", r2, err)
	}
	reqs := s.Requests()
	if s.Calls() != 2 || len(reqs) != 2 {
		t.Fatalf("calls %d", s.Calls())
	}
	for _, r := range reqs {
		if !r.Authorized || r.Authorization != "Bearer "+key || r.Model != "m" || len(r.Messages) != 1 ||
			r.Messages[0].Content != "hi" || len(r.Tools) != 1 || r.Tools[0].Function.Name != "echo" {
			t.Fatalf("request %+v", r)
		}
	}
}

func TestWrongKeyIsRejectedAndConsumesNothing(t *testing.T) {
	t.Parallel()
	s := fakeopenai.New(t, key, fakeopenai.Text("ok"))
	_, err := ask(context.Background(), client(s, "sk-other"))
	var apiErr *openai.APIError
	if !errors.As(err, &apiErr) || apiErr.HTTPStatusCode != http.StatusUnauthorized {
		t.Fatalf("err %v", err)
	}
	if r, err := ask(context.Background(), client(s, key)); err != nil || r.Choices[0].Message.Content != "ok" {
		t.Fatalf("%+v %v", r, err)
	}
	if reqs := s.Requests(); len(reqs) != 2 || reqs[0].Authorized || !reqs[1].Authorized {
		t.Fatalf("requests %+v", reqs)
	}
}

func TestFaults(t *testing.T) {
	t.Parallel()
	s := fakeopenai.New(t, key,
		fakeopenai.Reply{Status: 429, RetryAfter: "7"},
		fakeopenai.Reply{Status: 400, Message: "bad", EchoAuth: true},
		fakeopenai.Reply{Delay: time.Minute, Content: "late"},
		fakeopenai.Text("on time"))
	c := client(s, key)
	var apiErr *openai.APIError
	if _, err := ask(context.Background(), c); !errors.As(err, &apiErr) || apiErr.HTTPStatusCode != 429 {
		t.Fatalf("429: %v", err)
	}
	if _, err := ask(context.Background(), c); !errors.As(err, &apiErr) || apiErr.HTTPStatusCode != 400 ||
		!strings.Contains(apiErr.Message, "Bearer "+key) {
		t.Fatalf("400: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err := ask(ctx, c); !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 10*time.Second {
		t.Fatalf("slow: %v after %s", err, time.Since(start))
	}
	if r, err := ask(context.Background(), c); err != nil || r.Choices[0].Message.Content != "on time" {
		t.Fatalf("%+v %v", r, err)
	}
	if s.Calls() != 4 {
		t.Fatalf("calls %d", s.Calls())
	}
}

func TestRetryAfterHeader(t *testing.T) {
	t.Parallel()
	s := fakeopenai.New(t, key, fakeopenai.Reply{Status: 429, RetryAfter: "7"})
	req, _ := http.NewRequest(http.MethodPost, s.BaseURL()+"/chat/completions", strings.NewReader(`{"model":"m","messages":[]}`))
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := s.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "7" {
		t.Fatalf("%d %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
}

// A max_tokens below what the reply would spend cuts it there, as a model
// stops at its limit; without one the script's usage stands.
func TestMaxTokensCutsTheAnswer(t *testing.T) {
	t.Parallel()
	s := fakeopenai.New(t, key, fakeopenai.Reply{Content: "long", PromptTokens: 10, CompletionTokens: 40},
		fakeopenai.Reply{Content: "long", PromptTokens: 10, CompletionTokens: 40})
	c := client(s, key)
	req := openai.ChatCompletionRequest{Model: "m", MaxTokens: 13, Messages: []openai.ChatCompletionMessage{{Role: "user", Content: "hi"}}}
	r, err := c.CreateChatCompletion(context.Background(), req)
	if err != nil || r.Usage.CompletionTokens != 13 || r.Usage.TotalTokens != 23 || r.Choices[0].FinishReason != openai.FinishReasonLength {
		t.Fatalf("with max_tokens 13: %+v %v", r, err)
	}
	req.MaxTokens = 0
	if r, err = c.CreateChatCompletion(context.Background(), req); err != nil || r.Usage.CompletionTokens != 40 ||
		r.Choices[0].FinishReason != openai.FinishReasonStop {
		t.Fatalf("without: %+v %v", r, err)
	}
	if reqs := s.Requests(); reqs[0].MaxTokens != 13 || reqs[1].MaxTokens != 0 {
		t.Fatalf("recorded max_tokens %d, %d", reqs[0].MaxTokens, reqs[1].MaxTokens)
	}
}
