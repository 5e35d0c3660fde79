package client_test

import (
	"context"
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
