package client_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/agentledger/agentledger/client"
)

// Another program submits a typed task through the HTTP API; retrying the
// call under the same key makes one task.
func ExampleSubmit() {
	c := client.HTTP("http://127.0.0.1:7450", "alt_…", nil)
	t, err := client.Submit(context.Background(), c, "refund", refund{Order: 7, Amount: 10}, client.Options{Key: "refund-7"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("task", t.ID, t.State)
}

// A payment service tells the task waiting for order 7's payment
// (wait_for_signal "payment.settled", key "order-7") that it settled;
// sending it again under the same key is the same signal.
func ExampleClient_Send() {
	c := client.HTTP("http://127.0.0.1:7450", "alt_…", nil)
	sent, err := c.Send(context.Background(), client.Signal{Name: "payment.settled", Key: "order-7",
		Payload: json.RawMessage(`{"amount":1500}`), IdempotencyKey: "evt-91"})
	switch {
	case err != nil:
		fmt.Println(err)
	case sent.Signal.TaskID != nil:
		fmt.Println("woke task", *sent.Signal.TaskID)
	default:
		fmt.Println("kept until", sent.Signal.ExpiresAt)
	}
}
