package tools_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/tools"
)

// Ticket is the open_ticket tool's arguments; its JSON Schema, which the
// model sees and every call is checked against, is generated from it.
type Ticket struct {
	Title    string `json:"title" jsonschema:"one line"`
	Priority int    `json:"priority,omitempty" jsonschema:"1 (highest) to 4"`
}

// A keyed tool: the tickets API deduplicates on the key it is given, so an
// attempt that died after sending may send again under the same key.
func ExampleDefine() {
	openTicket, err := tools.Define(tools.Spec[Ticket]{
		Name: "open_ticket", Description: "Open a ticket in the tickets API", Class: ledger.Keyed,
		Perform: func(ctx context.Context, c ledger.Call, t Ticket) (ledger.Result, error) {
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://tickets.internal/tickets",
				strings.NewReader(fmt.Sprintf(`{"title":%q}`, t.Title)))
			if err != nil {
				return ledger.Result{}, err
			}
			req.Header.Set("Idempotency-Key", c.DownstreamKey("tickets.internal"))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return ledger.Result{}, err // unknown outcome: the same key is sent again
			}
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			if err != nil {
				return ledger.Result{}, err // unknown outcome too
			}
			// A 2xx is the result; a 5xx or 429 is sent again under the
			// same key; another answer fails the task.
			return tools.Answer(resp, body)
		}})
	if err != nil {
		panic(err)
	}
	fmt.Println(openTicket.Name())
	fmt.Println(string(openTicket.Parameters()))
	// Output:
	// open_ticket
	// {"type":"object","properties":{"title":{"type":"string","description":"one line"},"priority":{"type":"integer","description":"1 (highest) to 4"}},"required":["title"],"additionalProperties":false}
}

// A tool that does not say what kind of effect it has is refused: the
// ledger could not tell whether an unknown outcome may be sent again.
func ExampleDefine_noClass() {
	_, err := tools.Define(tools.Spec[Ticket]{Name: "open_ticket",
		Perform: func(context.Context, ledger.Call, Ticket) (ledger.Result, error) { return ledger.Result{}, nil }})
	fmt.Println(err)
	// Output:
	// tools: tool "open_ticket" declares no effect class (pure, keyed, reconcilable, unsafe or local)
}
