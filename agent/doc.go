// Package agent runs the "agent" task kind: a chat loop with an
// OpenAI-compatible model (through github.com/sashabaranov/go-openai) that
// may call tools, in which every model completion and every tool call is a
// journaled effect.
//
// Step n of the loop is one completion, run through the ledger as a pure
// effect at step path "llm/n", followed by the tool calls the model asked
// for, each at "tool/n/<tool_call_id>", both through tools.Path. Because a completion
// is served from the ledger once recorded, running Work again for the same
// task generation — a re-claim after a crash, an operator's replay —
// rebuilds the same conversation byte for byte: the model is not asked
// again for a recorded step, and the tool calls that follow come out with
// the same keys, so no tool effect happens twice.
//
// The conversation is therefore built only from what the ledger stores: the
// payload, the tool schemas, the recorded completions and the recorded tool
// results (read back as stored, see runTool). Nothing in a request depends
// on time, randomness or the attempt; the API key is a transport secret and
// never enters a request, a result or an error.
//
// The tenant's grant (Config.Grants) is read before every completion and
// every tool call, so a revoke stops a running task at its next effect. A
// grant's "*" model is Config.Model only. When the grant bounds a task's
// tokens (grants.Grant.MaxTokens), each completion is sent max_tokens: the
// budget left less an estimate of the prompt (see estimatePrompt), and a
// prompt whose estimate alone takes all that is left is refused unsent.
// max_tokens is sent but kept out of the ledger request, so it never makes
// a replay's request differ from the recorded one: a replay is served what
// was recorded, under whatever limit (or none) it was made.
//
// A message with tool calls runs them whatever its finish_reason; one
// without is the answer, unless it is a refusal, withheld by a content
// filter, or empty, which fail the task (see unanswered). Config's
// AzureAPIVersion switches to Azure OpenAI's deployment URLs. The shapes of
// answers each kind of endpoint sends are tested in endpoints_test.go and
// described for users in docs/models.md.
package agent
