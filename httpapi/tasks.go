package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/admit"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/grants"
	"github.com/agentledger/agentledger/operator"
	"github.com/agentledger/agentledger/registry"
)

// Task is a task as the API shows it (snake_case JSON). Fields without a
// value are null.
type Task struct {
	ID                int64           `json:"id"`
	Tenant            string          `json:"tenant"`
	Queue             string          `json:"queue"`
	Kind              string          `json:"kind"`
	Payload           json.RawMessage `json:"payload"`
	Priority          int16           `json:"priority"`
	RunAt             time.Time       `json:"run_at"`
	State             string          `json:"state"`
	Attempt           int32           `json:"attempt"`
	MaxAttempts       int32           `json:"max_attempts"`
	Generation        int32           `json:"generation"`
	CancelRequestedAt *time.Time      `json:"cancel_requested_at"`
	Result            json.RawMessage `json:"result"`
	LastError         *string         `json:"last_error"`
	// WaitReason says what a queued or retrying task waits for: a
	// fleet-wide limit since its last attempt was deferred, or a daemon
	// with what it needs ("waiting for a daemon with tool open_ticket");
	// null when it does not wait.
	WaitReason *string `json:"wait_reason"`
	// Compensation says why the task undoes its effects (failed,
	// cancelled, operator: someone asked); null on its forward path.
	Compensation *string `json:"compensation"`
	// CompensationRequestedBy is, on GET /v1/tasks/{id} and in the answer
	// of POST /v1/tasks/{id}/compensate, who asked the task to undo its
	// effects: the token ("tenant:acme, token ci-deploy (7)") or an
	// operator ("operator:alice"). Absent when no one asked (a failure, a
	// cancel) or who did is not recorded.
	CompensationRequestedBy *string `json:"compensation_requested_by,omitempty"`
	// CompensationCause is, on GET /v1/tasks/{id} of a task that undoes or
	// undid its effects, the error that sent it there (the forward path's
	// failure, a denial, a cancel): a finished compensation clears
	// last_error. Absent otherwise.
	CompensationCause *string    `json:"compensation_cause,omitempty"`
	CreatedAt         time.Time  `json:"created_at"`
	UpdatedAt         time.Time  `json:"updated_at"`
	FinishedAt        *time.Time `json:"finished_at"`
}

// TaskList is a page of GET /v1/tasks, newest first. NextCursor, when not
// null, fetches the next page.
type TaskList struct {
	Tasks      []Task  `json:"tasks"`
	NextCursor *string `json:"next_cursor"`
}

// CreateTaskRequest is the body of POST /v1/tasks. The bearer token names
// the tenant: Tenant may repeat it, and any other tenant is refused (422).
// MaxAttempts is 1–1000, or absent for the default. A task no live worker
// serves (its kind, or its kind on its queue) is refused (422) unless
// AllowUnserved queues it for a worker that is not up yet.
type CreateTaskRequest struct {
	Tenant      string          `json:"tenant,omitempty"`
	Queue       string          `json:"queue,omitempty"`
	Kind        string          `json:"kind"`
	Payload     json.RawMessage `json:"payload,omitempty"`
	Priority    int             `json:"priority,omitempty"`
	RunAt       *time.Time      `json:"run_at,omitempty"`
	MaxAttempts *int32          `json:"max_attempts,omitempty"`

	AllowUnserved bool `json:"allow_unserved,omitempty"`
}

func viewTask(t *agentledger.Task) Task {
	v := Task{
		ID: t.ID, Tenant: t.Tenant, Queue: t.Queue, Kind: t.Kind, Payload: t.Payload, Priority: t.Priority,
		RunAt: t.RunAt, State: string(t.State), Attempt: t.Attempt, MaxAttempts: t.MaxAttempts,
		Generation: t.Generation, CancelRequestedAt: t.CancelRequested, Result: t.Result,
		CreatedAt: t.CreatedAt, UpdatedAt: t.UpdatedAt, FinishedAt: t.FinishedAt,
	}
	if len(v.Result) == 0 {
		v.Result = nil
	}
	if t.LastError != "" {
		v.LastError = &t.LastError
	}
	if t.Compensation != "" {
		v.Compensation = &t.Compensation
	}
	if t.WaitReason != "" && (t.State == agentledger.StateQueued || t.State == agentledger.StateRetrying || t.State == agentledger.StateWaiting) {
		v.WaitReason = &t.WaitReason
	}
	return v
}

// taskPath is the URL of task id.
func taskPath(id int64) string { return "/v1/tasks/" + strconv.FormatInt(id, 10) }

// taskID reads the {id} of the route; an id that cannot exist is not found.
func taskID(r *http.Request) (int64, error) { return pathID(r, "task") }

// pathID is the {id} of r's path, a positive integer written plainly;
// anything else names no what ("approval request"), and so is not found.
func pathID(r *http.Request, what string) (int64, error) {
	s := r.PathValue("id")
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil || id <= 0 || strconv.FormatInt(id, 10) != s {
		return 0, agentledger.Errorf(agentledger.CodeNotFound, "%s %q not found", what, s)
	}
	return id, nil
}

// decodeBody decodes a JSON body into v, refusing unknown fields. The body
// is known to be one JSON value (fingerprint checked it). A body that is
// not a JSON object is malformed (400); a field of the object that does
// not decode — unknown, of the wrong JSON type, a time that is not RFC
// 3339 — is an invalid field (422), as a value out of range is.
func decodeBody(body []byte, v any) error {
	if b := bytes.TrimSpace(body); len(b) == 0 || b[0] != '{' {
		return fmt.Errorf("%w: the body must be a JSON object", errMalformed)
	}
	if err := checkFieldNames(body, v); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	var typeErr *json.UnmarshalTypeError
	var parseErr *time.ParseError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &typeErr) && typeErr.Field != "":
		if want, ok := integerFields[typeErr.Field]; ok && strings.HasPrefix(typeErr.Value, "number ") {
			return agentledger.Invalid(typeErr.Field, "must be an integer in %s, not %s", want, strings.TrimPrefix(typeErr.Value, "number "))
		}
		return agentledger.Invalid(typeErr.Field, "%s", agentledger.TypeProblem(typeErr))
	case errors.As(err, &parseErr), strings.HasPrefix(err.Error(), "Time.UnmarshalJSON"):
		return agentledger.Invalid("run_at", "must be an RFC 3339 time, as a JSON string") // the one time field
	}
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return agentledger.Invalid(agentledger.Clip(strings.Trim(name, `"`)), "is not a field of this request")
	}
	return agentledger.Invalid("", "%s", strings.TrimPrefix(err.Error(), "json: "))
}

// integerFields are the requests' integer fields with their ranges, which
// a number that does not decode into one is told of.
var integerFields = map[string]string{"priority": "0..100", "max_attempts": "1..1000"}

// createTask is POST /v1/tasks: 201 Created with the task and its Location.
//
// Under an Idempotency-Key the enqueue carries the key record's submission
// key, so the task is made once even when the request crashes between the
// enqueue and storing its answer: the retry takes the record over, claims
// finds the task by its submission key (a duplicate), and the answer is the
// 201 the crashed request would have given, showing the task as it is now.
func (s *Server) createTask(r *http.Request, tenant string, body []byte) (action, error) {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, fmt.Errorf("%w: the body must be a JSON object describing the task", errMalformed)
	}
	var req CreateTaskRequest
	if err := decodeBody(body, &req); err != nil {
		return nil, err
	}
	if req.Tenant != "" && req.Tenant != tenant {
		return nil, agentledger.Invalid("tenant", "the token is tenant %q's; a task cannot be submitted for %q", tenant, req.Tenant)
	}
	if req.Priority < math.MinInt16 || req.Priority > math.MaxInt16 {
		return nil, agentledger.Invalid("priority", "%d is outside 0..100 (lower runs first)", req.Priority) // as the door says
	}
	p := claims.EnqueueParams{Tenant: tenant, Queue: req.Queue, Kind: req.Kind, Payload: req.Payload,
		Priority: int16(req.Priority)} // the door refuses outside 0..100
	if req.MaxAttempts != nil {
		if *req.MaxAttempts < 1 {
			return nil, agentledger.Invalid("max_attempts", "%d is outside 1..1000 (leave it out for the default)", *req.MaxAttempts)
		}
		p.MaxAttempts = *req.MaxAttempts
	}
	if req.RunAt != nil {
		p.RunAt = *req.RunAt
	}
	p, err := s.cfg.Door.Admit(r.Context(), s.cfg.DB, admit.Submission{Caller: admit.Tenant, Params: p,
		Unserved: req.AllowUnserved, Override: `send "allow_unserved": true`})
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, submissionKey string) reply {
		p.SubmissionKey = submissionKey
		res, err := s.cfg.Claims.EnqueueStart(ctx, p, s.cfg.Door.Starter)
		if err != nil {
			return s.refusedReply(r, err)
		}
		return jsonReply(http.StatusCreated, viewTask(res.Task), "Location", taskPath(res.Task.ID))
	}, nil
}

// unstorablePayload turns PostgreSQL refusing the payload as jsonb into a
// 422 naming the payload: JSON that encoding/json accepts and jsonb does
// not (a lone UTF-16 surrogate such as \ud800, a number beyond numeric's
// range) is the client's mistake, which a retry would meet forever. The
// payload is the one value not checked before: any data exception (class
// 22) is its. Other errors pass unchanged.
func unstorablePayload(err error) error {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || !strings.HasPrefix(pe.Code, "22") {
		return err
	}
	why := pe.Message
	if pe.Detail != "" {
		why += ": " + strings.TrimSuffix(pe.Detail, ".")
	}
	return agentledger.Invalid("payload", "PostgreSQL's jsonb cannot store it (%s)", why)
}

// refusedReply answers an action's err: a payload PostgreSQL refused
// (unstorablePayload) is a 422 that frees the key, as the checks before
// the action free it, so the corrected request may use it; any other
// error is answered as it is.
func (s *Server) refusedReply(r *http.Request, err error) reply {
	invalid := unstorablePayload(err)
	rp := s.problemReply(r, invalid)
	rp.refused = invalid != err
	return rp
}

// noBody checks the body of a route that takes none: empty or {}.
func noBody(body []byte) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil
	}
	return decodeBody(body, &struct{}{})
}

// cancelTask is POST /v1/tasks/{id}/cancel: 200 with the task when it is
// cancelled (at once, or before), 202 when it is running and its attempt
// has yet to stop (before its next call); 409 when it finished
// otherwise. The task's last error names the token ("cancelled by
// tenant:acme, token ci-deploy (7)").
func (s *Server) cancelTask(r *http.Request, tenant string, body []byte) (action, error) {
	id, by, err := s.tokenOnTask(r, tenant, body)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, _ string) reply {
		// Recorded as the token's, as a wait it ends or a decision is.
		t, err := s.cfg.Operator.CancelBy(ctx, tenant, id, by)
		if errors.Is(err, agentledger.ErrConflict) {
			// Cancelling a cancelled task asks for what is.
			if cur, gerr := s.cfg.Claims.Get(ctx, tenant, id); gerr == nil && cur.State == agentledger.StateCancelled {
				t, err = cur, nil
			}
		}
		if err != nil {
			return s.problemReply(r, err)
		}
		status := http.StatusOK
		if t.State != agentledger.StateCancelled {
			status = http.StatusAccepted
		}
		return jsonReply(status, viewTask(t))
	}, nil
}

// replayTask is POST /v1/tasks/{id}/replay: 202 Accepted with the task
// queued to run again in the same generation (effects the ledger completed
// are served from it); 409 while it is queued or running, when retention
// removed its ledger rows, or when an effect of unknown outcome would
// stop it again (an operator settles that first); 403 when the tenant's
// grant no longer allows its kind.
func (s *Server) replayTask(r *http.Request, tenant string, body []byte) (action, error) {
	return onTask(r, body, func(ctx context.Context, id int64) reply {
		// A kind the grant no longer allows is a refusal of the request
		// as sent, and frees the key (http-api.md, Errors): granted again,
		// the same key runs the replay. Checked in the action, not before
		// the key is taken, so that a key that answered replays its
		// answer whatever the grant says since.
		if err := s.mayRun(ctx, tenant, id); err != nil && !errors.Is(err, agentledger.ErrNotFound) {
			rp := s.problemReply(r, err)
			rp.refused = errors.As(err, new(*grants.DeniedError))
			return rp
		}
		p, err := s.cfg.Operator.Replay(ctx, tenant, id)
		var stops *operator.StopsAtUnknownError
		switch {
		case errors.As(err, &stops):
			// The operator's answer names agentctl resolve, which is
			// theirs alone.
			err = agentledger.Errorf(agentledger.CodeConflict, "task %d has an effect of unknown outcome at %s: a replay would stop "+
				"there again; an operator settles it first", id, strings.Join(stops.Steps, ", "))
		case errors.Is(err, agentledger.ErrConflict):
			// The operator's answer points to agentctl rerun, which the
			// API has not: its way to a new intent is a new task.
			if t, gerr := s.cfg.Claims.Get(ctx, tenant, id); gerr == nil && t.State == agentledger.StateCompensated {
				err = agentledger.Errorf(agentledger.CodeConflict, "task %d is compensated: its effects were undone, and a "+
					"replay would neither do them again nor undo them twice; submit it again as a new task to run it anew", id)
			}
		}
		if err != nil {
			return s.problemReply(r, err)
		}
		return jsonReply(http.StatusAccepted, viewTask(p.Task))
	})
}

// mayRun refuses a tenant's replay of its task id whose kind its grant no
// longer allows (403): a kind is the right to have tasks of it run, which
// a revoke takes back for submissions and for the tenant's replays alike.
// (Tasks queued before the revoke are left to run: agentctl tenant revoke
// says how many, and how to cancel them.)
func (s *Server) mayRun(ctx context.Context, tenant string, id int64) error {
	if s.cfg.Door == nil || s.cfg.Door.Grants == nil {
		return nil
	}
	t, err := s.cfg.Claims.Get(ctx, tenant, id)
	if err != nil {
		return err
	}
	g, err := s.cfg.Door.Grants.For(ctx, tenant)
	if err != nil {
		return err
	}
	return g.Allow(tenant, grants.Need{Kind: t.Kind})
}

// compensateTask is POST /v1/tasks/{id}/compensate: 202 Accepted with the
// task in its compensation phase (a worker undoes its completed effects,
// newest first); 409 while it is queued or running, when it is already
// undoing or undone, or when none of its completed effects declared a
// compensation. The compensation records the token as who asked for it
// ("tenant:acme, token ci-deploy (7)"), as a cancel does.
func (s *Server) compensateTask(r *http.Request, tenant string, body []byte) (action, error) {
	id, by, err := s.tokenOnTask(r, tenant, body)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, _ string) reply {
		t, err := s.cfg.Operator.CompensateBy(ctx, tenant, id, by)
		if err != nil {
			return s.problemReply(r, err)
		}
		v := viewTask(t)
		v.CompensationRequestedBy = &by
		return jsonReply(http.StatusAccepted, v)
	}, nil
}

// tokenOnTask checks a token's action on the task of the request's path,
// which takes no body, and names the token as its actor ("tenant:acme,
// token ci-deploy (7)"), as the task will record it.
func (s *Server) tokenOnTask(r *http.Request, tenant string, body []byte) (id int64, by string, err error) {
	if id, err = taskID(r); err != nil {
		return 0, "", err
	}
	if err = noBody(body); err != nil {
		return 0, "", err
	}
	if by, err = s.decider(r, tenant); err != nil {
		return 0, "", err
	}
	return id, "tenant:" + by, nil
}

// onTask is an action on the task of the request's path, which takes no
// body: the path's id and the body are checked before the key is taken.
func onTask(r *http.Request, body []byte, do func(ctx context.Context, id int64) reply) (action, error) {
	id, err := taskID(r)
	if err != nil {
		return nil, err
	}
	if err := noBody(body); err != nil {
		return nil, err
	}
	return func(ctx context.Context, _ string) reply { return do(ctx, id) }, nil
}

// getTask is GET /v1/tasks/{id}. Another tenant's task is not found.
func (s *Server) getTask(r *http.Request, tenant string) reply {
	id, err := taskID(r)
	if err != nil {
		return s.problemReply(r, err)
	}
	t, err := s.cfg.Claims.Get(r.Context(), tenant, id)
	if err != nil {
		return s.problemReply(r, err)
	}
	if err := registry.New(s.cfg.DB).ExplainWaits(r.Context(), t); err != nil {
		return s.problemReply(r, err)
	}
	v := viewTask(t)
	if t.Compensation != "" {
		// The attempt that entered the phase closed with its cause.
		atts, err := s.cfg.Claims.Attempts(r.Context(), t.ID)
		if err != nil {
			return s.problemReply(r, err)
		}
		if cause := agentledger.CompensationCause(t.Generation, atts); cause != "" {
			v.CompensationCause = &cause
		}
		if t.Compensation == "operator" { // asked for: by whom, if recorded
			by, err := s.cfg.Operator.CompensationRequester(r.Context(), tenant, t.ID)
			if err != nil {
				return s.problemReply(r, err)
			}
			if by != "" {
				v.CompensationRequestedBy = &by
			}
		}
	}
	return jsonReply(http.StatusOK, v)
}

// Effect is one effect of a task's journal as the API shows it.
type Effect struct {
	Step        string          `json:"step"`
	Operation   string          `json:"operation"`
	Class       string          `json:"class"`
	State       string          `json:"state"`
	Performed   int32           `json:"performed"`
	Status      int             `json:"status,omitempty"`
	Result      json.RawMessage `json:"result,omitempty"`
	ExternalRef string          `json:"external_ref,omitempty"`
	Error       string          `json:"error,omitempty"`
	Note        string          `json:"note,omitempty"`
	// Undoes is, for a compensation, the step of the effect it undoes.
	Undoes string `json:"undoes,omitempty"`
}

// operatorNotices starts the step paths of the posts the operator's
// notification rules and approval requests made about a task
// ("notify/<rule>", "notify/approval:<id>"): they name the operator's
// channels and messages, so a tenant's journal leaves them out. (The
// tenant's own notify steps are at "tool/<n>".)
const operatorNotices = "notify/"

// getJournal is GET /v1/tasks/{id}/journal: the effects of the task's
// current generation in the order they were intended, compensations among
// them naming the effect each undoes, less the operator's notices. Another
// tenant's task is not found.
func (s *Server) getJournal(r *http.Request, tenant string) reply {
	id, err := taskID(r)
	if err != nil {
		return s.problemReply(r, err)
	}
	t, effects, err := s.cfg.Operator.Journal(r.Context(), tenant, id)
	if err != nil {
		return s.problemReply(r, err)
	}
	out := make([]Effect, 0, len(effects))
	for _, e := range effects {
		if strings.HasPrefix(e.Step, operatorNotices) {
			continue
		}
		out = append(out, Effect{Step: e.Step, Operation: e.Operation, Class: string(e.Class), State: string(e.State),
			Performed: e.Performed, Status: e.Status, Result: e.Result, ExternalRef: e.ExternalRef, Error: e.Error,
			Note: e.Note, Undoes: e.Undoes})
	}
	return jsonReply(http.StatusOK, struct {
		Task       int64    `json:"task"`
		Generation int32    `json:"generation"`
		Effects    []Effect `json:"effects"`
	}{t.ID, t.Generation, out})
}

// List limits.
const (
	defaultListLimit = 50
	maxListLimit     = 500
)

// listParams are the query parameters GET /v1/tasks takes.
var listParams = []string{"state", "queue", "kind", "limit", "cursor"}

// listTasks is GET /v1/tasks?state=&queue=&kind=&limit=&cursor=: the
// tenant's tasks newest first. state takes several states, comma-separated
// or repeated.
func (s *Server) listTasks(r *http.Request, tenant string) reply {
	q, err := parseQuery(r.URL.RawQuery)
	if err != nil {
		return s.problemReply(r, err)
	}
	p, err := parseList(q)
	if err != nil {
		return s.problemReply(r, err)
	}
	p.Tenant = tenant
	limit := p.Limit
	p.Limit++ // one more tells whether a next page exists
	ts, err := s.cfg.Claims.List(r.Context(), p)
	if err != nil {
		return s.problemReply(r, err)
	}
	ts = ts[:min(len(ts), limit+1)]
	if err := registry.New(s.cfg.DB).ExplainWaits(r.Context(), ts[:min(len(ts), limit)]...); err != nil {
		return s.problemReply(r, err)
	}
	out := TaskList{Tasks: make([]Task, 0, min(len(ts), limit))}
	for _, t := range ts[:min(len(ts), limit)] {
		out.Tasks = append(out.Tasks, viewTask(t))
	}
	if len(ts) > limit {
		c := encodeCursor(ts[limit-1].ID)
		out.NextCursor = &c
	}
	return jsonReply(http.StatusOK, out)
}

// parseList checks GET /v1/tasks's query. Every error matches
// errBadParameter (400).
func parseList(q url.Values) (claims.ListParams, error) {
	p := claims.ListParams{Limit: defaultListLimit}
	if err := checkQuery(q, listParams); err != nil {
		return p, err
	}
	sts, err := states(q, func(st string) bool { return agentledger.TaskState(st).Valid() }, agentledger.TaskStates)
	if err != nil {
		return p, err
	}
	for _, st := range sts {
		p.States = append(p.States, agentledger.TaskState(st))
	}
	p.Queue, p.Kind = q.Get("queue"), q.Get("kind")
	if p.Limit, err = limit(q, defaultListLimit); err != nil {
		return p, err
	}
	if v := q.Get("cursor"); v != "" {
		id, err := decodeCursor(v)
		if err != nil {
			return p, err
		}
		p.Before = id
	}
	return p, nil
}
