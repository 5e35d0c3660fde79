package agent

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/agentledger/agentledger/grants"
	"github.com/agentledger/agentledger/internal/secretfmt"
	"github.com/agentledger/agentledger/saga"
	"github.com/agentledger/agentledger/tools"
)

// Kind is the task kind the Agent handles.
const Kind = "agent"

// Defaults applied by New to zero Config fields.
const (
	DefaultRequestTimeout = 60 * time.Second
	DefaultMaxSteps       = 10
	DefaultRetries        = 3
	DefaultRetryBase      = 500 * time.Millisecond
	// DefaultMaxAnswerTokens caps the max_tokens of a budgeted completion:
	// hosted endpoints answer 400 to a max_tokens above the model's output
	// limit, and 4096 is within that of every current chat model.
	DefaultMaxAnswerTokens = 4096
)

// ErrNoEndpoint is why agent tasks fail when no model endpoint is
// configured. Work returns it wrapped by agentledger.Permanent, having done
// nothing.
var ErrNoEndpoint = errors.New("agent tasks need a model endpoint: set AGENTLEDGER_LLM_BASE_URL " +
	"(and AGENTLEDGER_LLM_API_KEY, AGENTLEDGER_LLM_MODEL); steps tasks run without one")

// Config configures an Agent. The daemon fills it from the environment.
type Config struct {
	// BaseURL is the root of an OpenAI-compatible API, such as
	// "http://127.0.0.1:8080/v1" or "https://api.openai.com/v1"
	// (AGENTLEDGER_LLM_BASE_URL). Empty: every agent task fails permanently
	// with ErrNoEndpoint.
	BaseURL string
	// APIKey is sent as the bearer token (AGENTLEDGER_LLM_API_KEY). It is a
	// secret: it is never logged, never part of an error, never in a ledger
	// request, hash or result. Config's String and LogValue hide it.
	APIKey string
	// AzureAPIVersion, when set, speaks Azure OpenAI's API shape instead of
	// OpenAI's (AGENTLEDGER_LLM_AZURE_API_VERSION): BaseURL is the
	// resource's endpoint (https://<resource>.openai.azure.com), the model
	// a task asks for names the deployment, which goes in the URL path
	// (/openai/deployments/<model>/chat/completions), this version goes in
	// the api-version query parameter, and APIKey in an api-key header.
	// Check says what is wrong with it.
	AzureAPIVersion string
	// Model is the model asked when a task names none
	// (AGENTLEDGER_LLM_MODEL). A task that names none while Model is empty
	// fails permanently. Changing it changes the request of every step, so
	// a replay of a task recorded with another model fails with
	// agentledger.ErrKeyReuse instead of mixing two models' answers.
	Model string
	// RequestTimeout bounds one HTTP call to the model. Default 60s.
	RequestTimeout time.Duration
	// MaxSteps is the most completions one task may take; a task may ask
	// for fewer, never more. Default 10.
	MaxSteps int
	// Retries is how many times a transient failure of one completion
	// (429, 5xx, timeout, connection error) is retried within the attempt
	// before Work returns it to the worker, which retries the task later.
	// Zero means DefaultRetries; a negative value disables retries.
	Retries int
	// RetryBase is the first backoff between in-attempt retries; it doubles
	// per retry, with jitter. A 429's Retry-After replaces it. Default 500ms.
	RetryBase time.Duration
	// HTTPClient sends the requests. Default: a client with
	// http.DefaultTransport and no timeout of its own (RequestTimeout
	// bounds each call).
	HTTPClient *http.Client
	// Gate, when set, admits every request to the model against the
	// endpoint's fleet-wide limits (requests and tokens per minute, calls
	// in flight) and circuit breaker, target flow.Model(host of BaseURL):
	// a request that must wait defers its task without using an attempt,
	// and the tokens each answer reports are booked on the budget.
	Gate tools.Gate
	// Grants, when set, give each task's tenant grant, read again before
	// every completion and every tool call (a grants.Cache answers without
	// a query while its LISTEN session is up), so that a revoke stops a
	// running task at its next effect: its model calls and tool calls are
	// checked against it, on a replay too. A grant's "*" model is Model.
	Grants grants.Source
	// Path, when set, is the effect path every completion and tool call
	// takes (the daemon's, shared by every kind, with its interceptors;
	// its Grants are then the ones read); nil: one of the agent's own over
	// its ledger, tools and Grants.
	Path *tools.Path
	// MaxAnswerTokens caps the max_tokens sent with a completion of a task
	// whose grant bounds its tokens (grants.Grant.MaxTokens), which is
	// otherwise what the budget leaves once the prompt is counted; a
	// completion of an unbounded task is sent none. Default
	// DefaultMaxAnswerTokens.
	MaxAnswerTokens int
	// Compensations declare, by tool name, the call that undoes a call of
	// that tool in every agent task that may use it (agentd's
	// [[compensation]] tables); a task's payload may declare its own for
	// a tool, which then stands instead.
	Compensations map[string]saga.Compensation
	// Logger says, at info, each tool call the model asked for that was
	// not performed (a tool the task may not use, arguments the tool
	// refused, a host or a grant that does not allow it): the model is
	// told why in its conversation, which an operator does not read. Nil:
	// slog.Default().
	Logger *slog.Logger
}

// withDefaults returns c with zero fields filled.
func (c Config) withDefaults() Config {
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.RequestTimeout <= 0 {
		c.RequestTimeout = DefaultRequestTimeout
	}
	if c.MaxSteps <= 0 {
		c.MaxSteps = DefaultMaxSteps
	}
	switch {
	case c.Retries == 0:
		c.Retries = DefaultRetries
	case c.Retries < 0:
		c.Retries = 0
	}
	if c.RetryBase <= 0 {
		c.RetryBase = DefaultRetryBase
	}
	if c.MaxAnswerTokens <= 0 {
		c.MaxAnswerTokens = DefaultMaxAnswerTokens
	}
	if c.HTTPClient == nil {
		c.HTTPClient = &http.Client{}
	}
	return c
}

// String describes c without its API key.
func (c Config) String() string {
	return fmt.Sprintf("agent.Config{BaseURL:%q APIKey:%s AzureAPIVersion:%q Model:%q RequestTimeout:%s MaxSteps:%d Retries:%d RetryBase:%s}",
		secretfmt.URL(c.BaseURL), hidden(c.APIKey), c.AzureAPIVersion, c.Model, c.RequestTimeout, c.MaxSteps, c.Retries, c.RetryBase)
}

// GoString is String, so that %#v does not print the API key either.
func (c Config) GoString() string { return c.String() }

// LogValue logs c without its API key.
func (c Config) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("base_url", secretfmt.URL(c.BaseURL)),
		slog.String("api_key", hidden(c.APIKey)),
		slog.String("azure_api_version", c.AzureAPIVersion),
		slog.String("model", c.Model),
		slog.Duration("request_timeout", c.RequestTimeout),
		slog.Int("max_steps", c.MaxSteps),
		slog.Int("retries", c.Retries),
		slog.Duration("retry_base", c.RetryBase),
	)
}

func hidden(secret string) string {
	if secret == "" {
		return "(none)"
	}
	return "(set)"
}
