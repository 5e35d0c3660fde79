package webhooks

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/problem"
)

// ProblemType is the prefix of every problem's "type": the code follows
// it, as in the HTTP API's answers.
const ProblemType = problem.TypePrefix

// rejection is an error answer of the handler: a code of the error
// vocabulary (agentledger.Code) with a detail. A detail never holds a
// secret or a signature.
type rejection struct {
	problem.Problem
	err error
}

// newProblem is the answer code with a detail.
func newProblem(code agentledger.Code, format string, args ...any) *rejection {
	err := agentledger.Errorf(code, format, args...)
	return &rejection{Problem: problem.Of(err), err: err}
}

func (p *rejection) write(w http.ResponseWriter) {
	h := w.Header()
	if p.Status == http.StatusMethodNotAllowed {
		h.Set("Allow", http.MethodPost)
	}
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	problem.Write(w, p.err)
}

func writeJSON(w http.ResponseWriter, status int, contentType string, v any) {
	b, err := json.Marshal(v)
	if err != nil { // only plain structs and maps of strings are written
		panic(fmt.Sprintf("webhooks: %v", err))
	}
	h := w.Header()
	h.Set("Content-Type", contentType)
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}
