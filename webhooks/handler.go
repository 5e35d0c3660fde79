package webhooks

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/admit"
	"github.com/agentledger/agentledger/canonjson"
)

// DefaultMaxBody is the largest body a delivery may have unless
// Config.MaxBody says otherwise: 1 MiB.
const DefaultMaxBody = 1 << 20

// Outcomes reported to Config.OnDelivery.
const (
	// OutcomeAccepted: the delivery became a new task (202).
	OutcomeAccepted = "accepted"
	// OutcomeDuplicate: the delivery was accepted before; nothing was done
	// (200).
	OutcomeDuplicate = "duplicate"
	// OutcomeRejected: the request was refused (4xx) and nothing stored.
	OutcomeRejected = "rejected"
	// OutcomeFailed: the delivery could not be stored (5xx); the sender
	// should retry.
	OutcomeFailed = "failed"
)

// Pool is what the handler needs of the database: *pgxpool.Pool, *pgx.Conn
// and pgx.Tx have it. Each delivery takes one transaction.
type Pool interface {
	Begin(ctx context.Context) (pgx.Tx, error)
}

// Config tunes a Handler. The zero Config is valid.
type Config struct {
	// MaxBody is the largest body accepted, in bytes; larger ones are
	// answered 413. 0 means DefaultMaxBody.
	MaxBody int64
	// Logger receives one record per delivery: accepted, duplicate,
	// rejected or failed, with the source, the delivery id and the task id
	// (never a secret or a signature). Nil means slog.Default().
	Logger *slog.Logger
	// OnDelivery, if set, is called once per request to a known source
	// with its name and an outcome: OutcomeAccepted, OutcomeDuplicate,
	// OutcomeRejected or OutcomeFailed (for metrics). Requests to unknown
	// sources and Slack's url_verification handshakes are not reported.
	// It must be safe for concurrent use and return quickly.
	OnDelivery func(source, outcome string)
	// Now is the clock Slack timestamps are checked against; nil means
	// time.Now.
	Now func() time.Time
	// Door admits each delivery's task, its caller the source (package
	// admit); nil means the zero door (no grants, published schemas).
	Door *admit.Door
}

// Handler receives webhook deliveries at POST /v1/hooks/{source}: it
// verifies each against its source's secret, dedupes it on its delivery id
// in the inbox and enqueues its task, in one transaction.
type Handler struct {
	db      Pool
	sources map[string]*Source
	maxBody int64
	log     *slog.Logger
	report  func(source, outcome string)
	now     func() time.Time
	door    *admit.Door
}

// New returns a Handler for sources over db. Each source is validated
// (Source.Validate); names must be unique. The sources are copied. A
// source's error names it by index and name, never its secret; it and a
// bad Config match agentledger.ErrInvalid.
func New(db Pool, sources []Source, cfg Config) (*Handler, error) {
	if db == nil {
		return nil, errors.New("webhooks: no database")
	}
	if cfg.MaxBody < 0 {
		return nil, fmt.Errorf("webhooks: %w", agentledger.Invalid("max_body", "%d is negative", cfg.MaxBody))
	}
	h := &Handler{
		db:      db,
		sources: make(map[string]*Source, len(sources)),
		maxBody: cfg.MaxBody,
		log:     cfg.Logger,
		report:  cfg.OnDelivery,
		now:     cfg.Now,
		door:    cfg.Door,
	}
	if h.door == nil {
		h.door = &admit.Door{}
	}
	if h.maxBody == 0 {
		h.maxBody = DefaultMaxBody
	}
	if h.log == nil {
		h.log = slog.Default()
	}
	if h.report == nil {
		h.report = func(string, string) {}
	}
	if h.now == nil {
		h.now = time.Now
	}
	for i := range sources {
		s := sources[i]
		err := s.normalize()
		if _, dup := h.sources[s.Name]; err == nil && dup {
			err = agentledger.Invalid("name", "%q is used by another source", s.Name)
		}
		if err != nil {
			return nil, fmt.Errorf("webhooks: %w", entryError(i, s.Name, err))
		}
		h.sources[s.Name] = &s
	}
	return h, nil
}

// ServeHTTP handles one delivery to the source named by the request's
// {source} path value. See the package comment for the answers.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("source")
	s, ok := h.sources[name]
	if !ok {
		h.log.LogAttrs(r.Context(), slog.LevelInfo, "webhook rejected",
			slog.String("source", clip(name, 64)), slog.String("code", string(agentledger.CodeUnknownSource)))
		newProblem(agentledger.CodeUnknownSource, "no webhook source is named %q", clip(name, 64)).write(w)
		return
	}
	if r.Method != http.MethodPost {
		h.reject(w, r, s, "", newProblem(agentledger.CodeMethodNotAllowed, "webhooks are delivered with POST"))
		return
	}
	body, p := h.readBody(w, r)
	if p != nil {
		h.reject(w, r, s, "", p)
		return
	}
	if p := s.verify(r.Header, body, h.now()); p != nil {
		h.reject(w, r, s, "", p)
		return
	}
	d, p := s.parse(r.Header, body)
	if p != nil {
		h.reject(w, r, s, "", p)
		return
	}
	d.hash, d.bodyHash = s.dedupeHash(d.id, body), bodyHash(body)
	if d.challenge != nil {
		h.log.LogAttrs(r.Context(), slog.LevelInfo, "webhook url_verification answered", slog.String("source", s.Name))
		writeJSON(w, http.StatusOK, "application/json", map[string]string{"challenge": *d.challenge})
		return
	}
	if s.Signal != nil {
		h.serveSignal(w, r, s, d)
		return
	}
	payload, err := s.payload(d)
	if err != nil {
		h.reject(w, r, s, d.id, newProblem(agentledger.CodeInvalidBody, "the body is not JSON"))
		return
	}
	if _, err := canonjson.Hash(payload); err != nil {
		// A key given twice is two readings of one delivery: not JSON
		// here, as the API's answer for a body holds.
		h.reject(w, r, s, d.id, newProblem(agentledger.CodeInvalidBody, "the body is not JSON as agentledger reads it: %s",
			canonjson.Reason(err)))
		return
	}
	res, err := h.store(r.Context(), s, d, payload)
	switch {
	case errors.Is(err, agentledger.ErrKeyReuse):
		h.reject(w, r, s, d.id, newProblem(agentledger.CodeDeliveryConflict,
			"delivery id %q already made a task from a different delivery", d.id))
		return
	case unstorableJSON(err):
		// JSON that parsed, with a value refused: 422, as the API's.
		h.reject(w, r, s, d.id, newProblem(agentledger.CodeInvalid, "the body holds JSON PostgreSQL cannot store (a \\u0000 or a lone surrogate such as \\ud800 in a string, or a number beyond its range)"))
		return
	case errors.Is(err, agentledger.ErrInvalid):
		// The door refused the task (its kind's payload schema, a steps
		// payload that would fail): it would fail when it ran.
		h.reject(w, r, s, d.id, newProblem(agentledger.CodeInvalid, "the body makes no valid %s task: %v", s.Kind, err))
		return
	case err != nil:
		h.fail(w, r, s, d.id, err)
		return
	}
	attrs := []slog.Attr{slog.String("source", s.Name), slog.String("delivery_id", d.id),
		slog.String("event", d.event), slog.Int64("task_id", res.taskID)}
	if res.duplicate {
		if res.sameBodyAs != "" {
			attrs = append(attrs, slog.String("same_body_as", res.sameBodyAs))
		}
		h.log.LogAttrs(r.Context(), slog.LevelInfo, "webhook duplicate", attrs...)
		h.report(s.Name, OutcomeDuplicate)
		writeJSON(w, http.StatusOK, "application/json", struct {
			Duplicate bool  `json:"duplicate"`
			TaskID    int64 `json:"task_id"`
		}{true, res.taskID})
		return
	}
	h.log.LogAttrs(r.Context(), slog.LevelInfo, "webhook accepted", attrs...)
	h.report(s.Name, OutcomeAccepted)
	writeJSON(w, http.StatusAccepted, "application/json", struct {
		TaskID int64 `json:"task_id"`
	}{res.taskID})
}

// readBody reads the raw body, up to the size limit.
func (h *Handler) readBody(w http.ResponseWriter, r *http.Request) ([]byte, *rejection) {
	tooLarge := newProblem(agentledger.CodeBodyTooLarge, "the body exceeds %d bytes", h.maxBody)
	if r.ContentLength > h.maxBody {
		return nil, tooLarge
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.maxBody))
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		return nil, tooLarge
	case err != nil:
		return nil, newProblem(agentledger.CodeUnreadableBody, "the body could not be read")
	}
	return body, nil
}

// reject answers p, logs the refusal and reports it. deliveryID is set
// once the delivery is authentic.
func (h *Handler) reject(w http.ResponseWriter, r *http.Request, s *Source, deliveryID string, p *rejection) {
	// The peer's address: who sends bad signatures is what a reader of
	// this line looks for (as the Slack interactivity endpoint logs it).
	attrs := []slog.Attr{slog.String("source", s.Name), slog.String("code", p.Code), slog.Int("status", p.Status),
		slog.String("remote", r.RemoteAddr)}
	if deliveryID != "" {
		attrs = append(attrs, slog.String("delivery_id", deliveryID))
	}
	h.log.LogAttrs(r.Context(), slog.LevelWarn, "webhook rejected", attrs...)
	h.report(s.Name, OutcomeRejected)
	p.write(w)
}

// fail answers 503 for a delivery that could not be stored.
func (h *Handler) fail(w http.ResponseWriter, r *http.Request, s *Source, deliveryID string, err error) {
	h.log.LogAttrs(r.Context(), slog.LevelError, "webhook failed",
		slog.String("source", s.Name), slog.String("delivery_id", deliveryID), slog.Any("error", err))
	h.report(s.Name, OutcomeFailed)
	w.Header().Set("Retry-After", "5")
	newProblem(agentledger.CodeUnavailable, "the delivery could not be stored; retry").write(w)
}

// clip shortens an unauthenticated value before it is logged or echoed.
func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

var _ http.Handler = (*Handler)(nil)
