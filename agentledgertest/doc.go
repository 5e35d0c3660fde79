// Package agentledgertest is the home of the stand-ins a program that
// embeds agentledger needs in its own tests, in the manner of River's
// rivertest: each is an HTTP server on the loopback interface that speaks
// the real protocol, so the daemon's own clients (go-openai, slack-go, the
// HTTP tools) talk to it unchanged.
//
//   - agentledgertest/fakeopenai: an OpenAI-compatible chat completions
//     endpoint answering from a script, recording every request;
//   - agentledgertest/slackfake: the Slack Web API methods the Slack sink
//     calls, with scripted faults and a clock of its own;
//   - agentledgertest/downstream: a business API that honours
//     Idempotency-Key and counts hits apart from effects, so a test tells a
//     harmless keyed re-send from a duplicated effect.
//
// examples/mcp runs an agent task against fakeopenai.
package agentledgertest
