package httpapi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"path"
	"regexp"
	"runtime/debug"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/agentledger/agentledger/admit"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/operator"
	"github.com/agentledger/agentledger/tenants"
	"github.com/agentledger/agentledger/waits"
)

// DB is what the server needs from a connection for its Idempotency-Key
// records; *pgxpool.Pool has it.
type DB interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// Config configures a Server. DB, Tenants, Claims and Operator are
// required; every other zero value means its default.
type Config struct {
	// DB holds the idempotency_keys table.
	DB DB
	// Tenants authenticates bearer tokens.
	Tenants *tenants.Store
	// Claims holds the tasks.
	Claims *claims.Store
	// Operator cancels, replays and compensates tasks and reads and
	// decides approval requests, as agentctl and the console do.
	Operator *operator.Service
	// Door admits each submitted task, its caller the token's tenant
	// (package admit): its *agentledger.InvalidError is a 422 naming the
	// field, its *grants.DeniedError a 403. Nil: a door that checks no
	// grant and queues tasks no live worker serves (a database without a
	// fleet). Its Grants also say whether a tenant may decide approval
	// requests; without them no API tenant may.
	Door *admit.Door

	// Waits keeps the signals and the waits; nil: a store over DB, which
	// must then begin transactions (a pool does).
	Waits *waits.Store

	// Hooks, when set, serves POST /v1/hooks/{source} without bearer
	// authentication: webhooks authenticate by their signature.
	Hooks http.Handler

	// IdempotencyKeyOptional lets mutating requests without an
	// Idempotency-Key through (each one then acts anew). By default the
	// key is required: 400 idempotency_key_missing.
	IdempotencyKeyOptional bool
	// MaxBody is the largest request body accepted, in bytes: 1 MiB by
	// default. A larger one is 413.
	MaxBody int64
	// InFlightLease is how long a request holds its Idempotency-Key: other
	// requests with the key get 409 meanwhile, and the request's own work
	// is cut off at its end (so that a takeover never runs beside it).
	// After it a crashed request's key is taken over. 1 minute by default.
	InFlightLease time.Duration

	// Limits of the HTTP server Serve runs; defaults in parentheses.
	ReadHeaderTimeout time.Duration // (10s)
	ReadTimeout       time.Duration // whole request, body included (30s)
	WriteTimeout      time.Duration // from the end of the headers to the end of the answer (InFlightLease + 30s)
	IdleTimeout       time.Duration // keep-alive (2m)
	MaxHeaderBytes    int           // (64 KiB)
	// ShutdownTimeout bounds how long Serve waits for requests in flight
	// once its context ends; the rest are cut off (10s).
	ShutdownTimeout time.Duration

	// TrustedProxies are the reverse proxies in front of the server: a
	// request from one is counted against the failed-authentication budget
	// (and logged) under the client address its X-Forwarded-For names
	// (clientaddr.go). None: the header is ignored and the peer's address
	// counts. See ParseTrustedProxies.
	TrustedProxies []netip.Prefix
	// Now is the failed-authentication limiter's clock; nil means time.Now.
	Now func() time.Time

	// Logger receives server errors (never a token); slog.Default() when nil.
	Logger *slog.Logger
	// Observe, when set, is called after every request with its route
	// pattern ("unmatched" for none), status and duration: for metrics.
	Observe func(route string, status int, d time.Duration)
}

// Defaults of Config.
const (
	DefaultMaxBody           = 1 << 20
	DefaultInFlightLease     = time.Minute
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultReadTimeout       = 30 * time.Second
	DefaultIdleTimeout       = 2 * time.Minute
	DefaultMaxHeaderBytes    = 64 << 10
	DefaultShutdownTimeout   = 10 * time.Second
)

// The mutating operations: method and route pattern, the scope of an
// Idempotency-Key with the tenant.
const (
	OpCreateTask = "POST /v1/tasks"
	OpCancelTask = "POST /v1/tasks/{id}/cancel"
	OpReplayTask = "POST /v1/tasks/{id}/replay"
	// OpCompensateTask undoes a task's completed effects (its saga's
	// compensations).
	OpCompensateTask = "POST /v1/tasks/{id}/compensate"
)

// Server is the HTTP API of agentd.
type Server struct {
	cfg      Config
	log      *slog.Logger
	keys     *keyStore
	mux      *http.ServeMux
	failures failureLimiter
}

// New checks cfg, fills its defaults and returns a Server with the API's
// routes.
func New(cfg Config) (*Server, error) {
	switch {
	case cfg.DB == nil || cfg.Tenants == nil || cfg.Claims == nil || cfg.Operator == nil:
		return nil, errors.New("httpapi: Config needs DB, Tenants, Claims and Operator")
	case cfg.MaxBody < 0 || cfg.InFlightLease < 0 || cfg.ReadHeaderTimeout < 0 || cfg.ReadTimeout < 0 ||
		cfg.WriteTimeout < 0 || cfg.IdleTimeout < 0 || cfg.MaxHeaderBytes < 0 || cfg.ShutdownTimeout < 0:
		return nil, errors.New("httpapi: Config limits must not be negative")
	}
	if cfg.Door == nil {
		cfg.Door = &admit.Door{Unserved: true}
	}
	if cfg.Waits == nil {
		db, ok := cfg.DB.(waits.DB)
		if !ok {
			return nil, errors.New("httpapi: Config needs Waits, or a DB that begins transactions")
		}
		cfg.Waits = waits.NewStore(db)
	}
	def := func(v *time.Duration, d time.Duration) {
		if *v == 0 {
			*v = d
		}
	}
	if cfg.MaxBody == 0 {
		cfg.MaxBody = DefaultMaxBody
	}
	if cfg.MaxHeaderBytes == 0 {
		cfg.MaxHeaderBytes = DefaultMaxHeaderBytes
	}
	def(&cfg.InFlightLease, DefaultInFlightLease)
	def(&cfg.ReadHeaderTimeout, DefaultReadHeaderTimeout)
	def(&cfg.ReadTimeout, DefaultReadTimeout)
	def(&cfg.WriteTimeout, cfg.InFlightLease+30*time.Second)
	def(&cfg.IdleTimeout, DefaultIdleTimeout)
	def(&cfg.ShutdownTimeout, DefaultShutdownTimeout)
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	s := &Server{cfg: cfg, log: cfg.Logger, mux: http.NewServeMux(),
		keys: &keyStore{db: cfg.DB, lease: cfg.InFlightLease}, failures: failureLimiter{now: cfg.Now}}
	if s.log == nil {
		s.log = slog.Default()
	}
	s.mux.Handle(OpCreateTask, s.mutate(OpCreateTask, s.createTask))
	s.mux.Handle("GET /v1/tasks", s.read(s.listTasks))
	s.mux.Handle("GET /v1/tasks/{id}", s.read(s.noQuery(s.getTask)))
	s.mux.Handle("GET /v1/tasks/{id}/journal", s.read(s.noQuery(s.getJournal)))
	s.mux.Handle(OpCancelTask, s.mutate(OpCancelTask, s.cancelTask))
	s.mux.Handle(OpReplayTask, s.mutate(OpReplayTask, s.replayTask))
	s.mux.Handle(OpCompensateTask, s.mutate(OpCompensateTask, s.compensateTask))
	s.mux.Handle("GET /v1/approvals", s.read(s.listApprovals))
	s.mux.Handle("GET /v1/approvals/{id}", s.read(s.noQuery(s.getApproval)))
	s.mux.Handle(OpApprove, s.mutate(OpApprove, s.approve))
	s.mux.Handle(OpDeny, s.mutate(OpDeny, s.deny))
	s.mux.Handle(OpSendSignal, s.mutate(OpSendSignal, s.sendSignal))
	s.mux.Handle("GET /v1/signals", s.read(s.listSignals))
	s.mux.Handle("GET /v1/waits", s.read(s.listWaits))
	s.mux.Handle("GET /v1/waits/{id}", s.read(s.noQuery(s.getWait)))
	s.mux.Handle(OpEndWait, s.mutate(OpEndWait, s.endWait))
	if cfg.Hooks != nil {
		s.mux.Handle("POST /v1/hooks/{source}", cfg.Hooks)
	}
	return s, nil
}

// Handle adds a route outside the API (the daemon's /healthz, /readyz,
// /metrics): no bearer token, no Idempotency-Key, but the body limit,
// Observe and panic recovery apply. pattern is a ServeMux pattern; like
// ServeMux.Handle, Handle panics when it conflicts with a route.
func (s *Server) Handle(pattern string, h http.Handler) { s.mux.Handle(pattern, h) }

// Mount is Handle for a route of the embedding program's: a pattern the
// ServeMux refuses (malformed, or in conflict with a route already
// served, the API's own among them) is an error, where Handle panics.
func (s *Server) Mount(pattern string, h http.Handler) error { return TryHandle(s.mux, pattern, h) }

// TryHandle is mux.Handle with its refusal an error: ServeMux panics on a
// malformed pattern or a conflict. The error leaves out where each pattern
// was registered (this package's lines, not the caller's).
func TryHandle(mux *http.ServeMux, pattern string, h http.Handler) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = errors.New(registeredAt.ReplaceAllString(fmt.Sprint(r), ""))
		}
	}()
	mux.Handle(pattern, h)
	return nil
}

// registeredAt is where ServeMux says a pattern was registered.
var registeredAt = regexp.MustCompile(` \(registered at [^)]*\)`)

// Handler returns the API as an http.Handler.
func (s *Server) Handler() http.Handler { return http.HandlerFunc(s.serveHTTP) }

// Serve answers requests on ln until ctx ends, then shuts down gracefully:
// it stops accepting, lets the requests in flight finish for up to
// ShutdownTimeout, and cuts off the rest. It returns nil after a graceful
// shutdown, an error when requests had to be cut off or ln failed. Even a
// request net/http refuses before routing it is answered with a problem
// (earlyerror.go).
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: s.cfg.ReadHeaderTimeout,
		ReadTimeout:       s.cfg.ReadTimeout,
		WriteTimeout:      s.cfg.WriteTimeout,
		IdleTimeout:       s.cfg.IdleTimeout,
		MaxHeaderBytes:    s.cfg.MaxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(earlyListener{ln}) }()
	select {
	case err := <-served:
		return fmt.Errorf("httpapi: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.ShutdownTimeout)
	defer cancel()
	err := srv.Shutdown(sctx)
	if err != nil {
		_ = srv.Close() // cut off what is left
		err = fmt.Errorf("httpapi: requests still running after %s were cut off: %w", s.cfg.ShutdownTimeout, err)
	}
	<-served // http.ErrServerClosed
	return err
}

// serveHTTP is the outer layer of every request: the body limit, routing
// (with problem answers for unknown routes and methods), panic recovery
// and Observe.
func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	sw := &statusWriter{ResponseWriter: w}
	r, span := traceRequest(r)
	defer func() {
		p := recover()
		if p != nil && p != http.ErrAbortHandler {
			s.log.ErrorContext(r.Context(), "httpapi: panic", "method", r.Method, "route", r.Pattern,
				"panic", p, "stack", string(debug.Stack()))
			if sw.status == 0 {
				s.fail(sw, r, fmt.Errorf("panic: %v", p))
			}
		}
		if s.cfg.Observe != nil {
			route := r.Pattern
			if route == "" {
				route = "unmatched"
			}
			status := sw.status
			if status == 0 {
				status = http.StatusOK
			}
			s.cfg.Observe(route, status, time.Since(start))
		}
		if span != nil {
			status := sw.status
			if status == 0 {
				status = http.StatusOK
			}
			endRequest(span, r, status)
		}
		if p == http.ErrAbortHandler {
			panic(p)
		}
	}()
	r.Body = http.MaxBytesReader(sw, r.Body, s.cfg.MaxBody)
	// Every answer is about one tenant's data, now: no cache keeps it, and
	// no browser reads a problem+json as anything else.
	sw.Header().Set("Cache-Control", "no-store")
	sw.Header().Set("X-Content-Type-Options", "nosniff")
	if clean := cleanPath(r.URL.Path); clean != r.URL.Path && r.RequestURI != "*" {
		s.fail(sw, r, fmt.Errorf("%w: %s %q is not a clean path (its clean form: %s)", errNoRoute, r.Method, r.URL.Path, clean))
		return
	}
	if h, pattern := s.mux.Handler(r); pattern == "" {
		s.noRoute(sw, r, h)
		return
	}
	s.mux.ServeHTTP(sw, r)
}

// cleanPath is p as ServeMux routes it: a path with a doubled slash or a
// "." or ".." segment is redirected to this form. The API refuses it
// instead (404, naming it): a redirect is no answer for an API client,
// and one that followed a 307 would send a POST again to a path it did
// not write.
func cleanPath(p string) string {
	if p == "" {
		return "/"
	}
	if p[0] != '/' {
		p = "/" + p
	}
	c := path.Clean(p)
	if p[len(p)-1] == '/' && c != "/" {
		c += "/"
	}
	return c
}

// noRoute answers a request no route matches with a problem: ServeMux's
// own answer tells 404 from 405 (and its Allow header is kept).
func (s *Server) noRoute(w http.ResponseWriter, r *http.Request, h http.Handler) {
	rec := &headerRecorder{header: http.Header{}}
	h.ServeHTTP(rec, r)
	switch {
	case rec.status == http.StatusMethodNotAllowed:
		w.Header().Set("Allow", rec.header.Get("Allow"))
		s.fail(w, r, fmt.Errorf("%w: %s %s (allowed: %s)", errNoMethod, r.Method, r.URL.Path, rec.header.Get("Allow")))
	case rec.status == http.StatusNotFound:
		s.fail(w, r, fmt.Errorf("%w: %s %s", errNoRoute, r.Method, r.URL.Path))
	default:
		for k, vs := range rec.header {
			w.Header()[k] = vs
		}
		w.WriteHeader(rec.status)
	}
}

// statusWriter remembers the status written through it.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// headerRecorder keeps the status and headers of ServeMux's own answers;
// their plain-text bodies are dropped.
type headerRecorder struct {
	header http.Header
	status int
}

func (h *headerRecorder) Header() http.Header { return h.header }

func (h *headerRecorder) WriteHeader(code int) {
	if h.status == 0 {
		h.status = code
	}
}

func (h *headerRecorder) Write(b []byte) (int, error) {
	h.WriteHeader(http.StatusOK)
	return len(b), nil
}
