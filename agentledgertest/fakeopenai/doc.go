// Package fakeopenai is an OpenAI-compatible chat completions server for
// tests: POST /v1/chat/completions, as github.com/sashabaranov/go-openai
// sends it, answered from a script of canned replies served in order.
//
// Every request must carry the configured bearer key; one that does not is
// answered 401 and consumes no reply. The server records every request it
// receives (headers, body, decoded messages, tools and max_tokens) for
// assertions, and a reply can be a fault instead of an answer: an error
// status with an optional Retry-After, or a delay longer than the client's
// timeout. A request's max_tokens caps the completion tokens a reply
// reports, with finish_reason "length", as a model stops at it.
package fakeopenai
