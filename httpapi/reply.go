package httpapi

import (
	"encoding/json"
	"net/http"
	"strconv"
)

// reply is an answer built in full before it is written: the idempotency
// layer stores it (status, headers, body) and replays it byte for byte.
type reply struct {
	status int
	header http.Header
	body   []byte
	// refused: the request was refused as invalid inside the action
	// (what only PostgreSQL could check), as a check before it would have
	// refused it: the key is freed, not kept with this answer, as it is
	// after any refusal before the action.
	refused bool
}

// jsonReply encodes v as the body of a status answer; kv are extra header
// name/value pairs.
func jsonReply(status int, v any, kv ...string) reply {
	body, err := json.Marshal(v)
	if err != nil { // only our own types are encoded
		panic("httpapi: encoding a reply: " + err.Error())
	}
	h := http.Header{"Content-Type": {"application/json"}}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Set(kv[i], kv[i+1])
	}
	return reply{status: status, header: h, body: append(body, '\n')}
}

// write sends the reply.
func (rp reply) write(w http.ResponseWriter) {
	h := w.Header()
	for k, vs := range rp.header {
		h[k] = vs
	}
	h.Set("Content-Length", strconv.Itoa(len(rp.body)))
	w.WriteHeader(rp.status)
	_, _ = w.Write(rp.body) // the client went away: nothing to do
}
