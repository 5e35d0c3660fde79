// Package agent runs the "agent" task kind: a chat loop with an
// OpenAI-compatible model (through github.com/sashabaranov/go-openai) that
// may call tools, in which every model completion and every tool call is a
// journaled effect.
//
// Step n of the loop is one completion, run through the ledger as a pure
// effect at step path "llm/n", followed by the tool calls the model asked
// for, each at "tool/n/<tool_call_id>" (tools.Invoke). Because a completion
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
package agent
