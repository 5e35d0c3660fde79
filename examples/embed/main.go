// Command embed is agentledger as a library: a program of its own runs the
// whole daemon with a typed task kind and a keyed tool that opens tickets
// in a small "tickets" API, submits a task, replays it, and shows that the
// ticket was opened once.
//
//	go run ./examples/embed      # on the embedded cluster ($AGENTLEDGER_STATE_DIR, else agentd's default), or DATABASE_URL
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/client"
	"github.com/agentledger/agentledger/daemon"
	"github.com/agentledger/agentledger/database"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/operator"
	"github.com/agentledger/agentledger/tools"
)

// Escalation is the payload of the escalate kind.
type Escalation struct {
	Incident string `json:"incident"`
	Severity int    `json:"severity"`
}

// Validate refuses an escalation without an incident.
func (e *Escalation) Validate() error {
	if e.Incident == "" {
		return agentledger.Invalid("incident", "is required")
	}
	return nil
}

// Ticket is the argument of the open_ticket tool.
type Ticket struct {
	Title string `json:"title" jsonschema:"what the ticket is about"`
}

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "embed:", err)
		os.Exit(1)
	}
}

// queue is the example's own: its daemon claims no task but its own,
// and no other daemon claims those.
const queue = "example-embed"

func run(ctx context.Context, out io.Writer) error {
	tickets, ticketsURL, err := startTickets()
	if err != nil {
		return err
	}
	openTicket, err := tools.Define(tools.Spec[Ticket]{
		Name: "open_ticket", Description: "Open a ticket in the tickets API", Class: ledger.Keyed,
		Perform: func(ctx context.Context, c ledger.Call, t Ticket) (ledger.Result, error) {
			body, _ := json.Marshal(t)
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, ticketsURL, bytesReader(body))
			req.Header.Set("Idempotency-Key", c.DownstreamKey("tickets")) // the API dedupes on it
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return ledger.Result{}, err
			}
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			if err != nil {
				return ledger.Result{}, err // unknown outcome: sent again under the same key
			}
			return tools.Answer(resp, b) // 408, 425, 429 and 5xx are sent again, another non-2xx fails the task

		},
	})
	if err != nil {
		return err
	}

	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	// Where the daemon keeps its state; the client below opens the same.
	state := daemon.Database{URL: os.Getenv("DATABASE_URL")}
	d := daemon.New(daemon.Config{
		Database:    state,
		Worker:      daemon.Worker{Queues: []string{queue}, PollInterval: 100 * time.Millisecond},
		Maintenance: daemon.Maintenance{NoCron: true, NoJanitor: true},
		Logger:      log,
		Stdout:      io.Discard,
	})
	// escalate decides from its typed payload whom to page; it performs
	// nothing outside, so it needs no ledger.
	if err := d.RegisterKind("escalate", daemon.Kind(func(_ context.Context, _ *agentledger.Task, e Escalation) (map[string]any, error) {
		return map[string]any{"incident": e.Incident, "page_oncall": e.Severity >= 2}, nil
	})); err != nil {
		return err
	}
	if err := d.RegisterTool(openTicket); err != nil {
		return err
	}
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	done := make(chan struct{})
	var runErr error
	go func() { runErr = d.Run(runCtx); close(done) }()
	defer func() { stop(); <-done }()

	select { // the daemon has migrated the database and is about to claim
	case <-d.Ready():
	case <-done:
		return fmt.Errorf("the daemon stopped: %w", runErr)
	}
	conn, err := database.Open(ctx, database.Config{URL: state.URL, StateDir: state.StateDir})
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	db := conn.Pool
	// Through the daemon's own door: the escalation's Validate runs here,
	// and a task its idle workers would run now is theirs at its insert.
	sub := d.Client("")

	esc, err := client.Submit(ctx, sub, "escalate", Escalation{Incident: "42", Severity: 2}, client.Options{Queue: queue})
	if err != nil {
		return err
	}
	escDone, err := succeeded(ctx, sub, esc.ID)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "escalate task %d succeeded: %s\n", esc.ID, escDone.Result)

	task, err := sub.Submit(ctx, client.Request{Kind: "steps", Options: client.Options{Queue: queue},
		Payload: json.RawMessage(`{"steps":[{"tool":"open_ticket","args":{"title":"incident 42: disk full"}}]}`)})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "submitted task %d (steps: open_ticket)\n", task.ID)
	if _, err := succeeded(ctx, sub, task.ID); err != nil {
		return err
	}
	opened, calls := tickets.count()
	fmt.Fprintf(out, "task %d succeeded; tickets opened: %d (requests: %d)\n", task.ID, opened, calls)
	if _, err := operator.New(db).Replay(ctx, "", task.ID); err != nil {
		return err
	}
	if _, err := succeeded(ctx, sub, task.ID); err != nil {
		return err
	}
	opened, after := tickets.count()
	fmt.Fprintf(out, "task %d replayed; tickets opened: %d, requests sent since: %d (the ledger served the call)\n", task.ID, opened, after-calls)
	if opened != 1 || after != calls {
		return fmt.Errorf("%d tickets opened, %d requests sent by the replay; want 1 and 0", opened, after-calls)
	}
	return nil
}

// ticketsAPI opens a ticket per Idempotency-Key, and counts the requests
// it got: a retry under the same key opens none but is one.
type ticketsAPI struct {
	mu       sync.Mutex
	keys     map[string]int
	requests int
}

// count is how many tickets were opened and how many requests came.
func (a *ticketsAPI) count() (opened, requests int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.keys), a.requests
}

func startTickets() (*ticketsAPI, string, error) {
	api := &ticketsAPI{keys: map[string]int{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, "", err
	}
	go http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { //nolint:errcheck // lives as long as the program
		api.mu.Lock()
		api.requests++
		id, ok := api.keys[r.Header.Get("Idempotency-Key")]
		if !ok {
			id = len(api.keys) + 1
			api.keys[r.Header.Get("Idempotency-Key")] = id
		}
		api.mu.Unlock()
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"ticket":%d}`, id)
	}))
	return api, "http://" + ln.Addr().String() + "/tickets", nil
}
