package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentledger/agentledger/database"
	"github.com/agentledger/agentledger/internal/pgplan"
	"github.com/agentledger/agentledger/migrations"
)

// Server is the database server under test and the means to give each run
// a fresh database.
type Server struct {
	flags   CommonFlags
	db      *database.DB
	admin   *pgxpool.Pool
	base    *pgxpool.Config // connection settings; Database is replaced per run
	tmpl    string          // template database (reset=template)
	prefix  string          // run database names start with it
	runs    int
	version string
}

// openServer connects as flags say, loads pg_stat_statements if asked, and
// prepares the fresh-database strategy.
func openServer(ctx context.Context, flags CommonFlags) (*Server, error) {
	s := &Server{flags: flags}
	if err := s.open(ctx); err != nil {
		return nil, err
	}
	if flags.PGStats {
		if err := s.loadPGStats(ctx); err != nil {
			s.Close()
			return nil, err
		}
	}
	if err := s.admin.QueryRow(ctx, "SHOW server_version").Scan(&s.version); err != nil {
		s.Close()
		return nil, err
	}
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	s.prefix = fmt.Sprintf("agentbench_%d_%s", os.Getpid(), hex.EncodeToString(b))
	var err error
	if flags.Reset == "template" {
		err = s.makeTemplate(ctx)
	} else {
		err = s.migrate(ctx, s.base.ConnConfig.Database)
	}
	if err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

func (s *Server) open(ctx context.Context) error {
	cfg := database.Config{URL: s.flags.DatabaseURL, StateDir: s.flags.StateDir, MaxConns: 4}
	if cfg.URL == "" {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	db, err := database.Open(ctx, cfg)
	if err != nil {
		return err
	}
	s.db, s.admin, s.base = db, db.Pool, db.Pool.Config()
	return nil
}

// loadPGStats makes sure pg_stat_statements is loaded: on the embedded
// cluster it is added to shared_preload_libraries and the cluster restarted.
func (s *Server) loadPGStats(ctx context.Context) error {
	loaded := func() (string, bool, error) {
		var libs string
		err := s.admin.QueryRow(ctx, "SHOW shared_preload_libraries").Scan(&libs)
		return libs, strings.Contains(libs, "pg_stat_statements"), err
	}
	libs, ok, err := loaded()
	if err != nil || ok {
		return err
	}
	if !s.db.Embedded() {
		return errors.New("--pg-stats: pg_stat_statements is not in shared_preload_libraries of this server; add it and restart the server")
	}
	if libs != "" {
		libs += ","
	}
	if _, err := s.admin.Exec(ctx, "ALTER SYSTEM SET shared_preload_libraries = "+quoteLiteral(libs+"pg_stat_statements")); err != nil {
		return fmt.Errorf("--pg-stats: %w", err)
	}
	if err := s.db.Close(ctx); err != nil { // stops the cluster if we were its only user
		return err
	}
	if err := s.open(ctx); err != nil {
		return err
	}
	if _, ok, err = loaded(); err != nil {
		return err
	}
	if !ok {
		return errors.New("--pg-stats: the embedded cluster is used by another process and could not restart with pg_stat_statements; stop it or use another --state-dir")
	}
	return nil
}

// Describe says what the server is, without secrets.
func (s *Server) Describe(ctx context.Context) string {
	var fsync, sc string
	_ = s.admin.QueryRow(ctx, "SELECT current_setting('fsync'), current_setting('synchronous_commit')").Scan(&fsync, &sc)
	return fmt.Sprintf("%s; server %s; fsync=%s synchronous_commit=%s; reset=%s", s.db, s.version, fsync, sc, s.flags.Reset)
}

// Close drops the template and disconnects.
func (s *Server) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if s.tmpl != "" {
		_, _ = s.admin.Exec(ctx, "DROP DATABASE IF EXISTS "+ident(s.tmpl)+" WITH (FORCE)")
	}
	_ = s.db.Close(ctx)
}

func (s *Server) makeTemplate(ctx context.Context) error {
	s.tmpl = s.prefix + "_tmpl"
	if _, err := s.admin.Exec(ctx, "CREATE DATABASE "+ident(s.tmpl)); err != nil {
		s.tmpl = ""
		var pe *pgconn.PgError
		if errors.As(err, &pe) && pe.Code == "42501" {
			return fmt.Errorf("this role may not create databases (%v); use --reset=truncate to empty the target database's tasks between runs instead", err)
		}
		return fmt.Errorf("creating the template database: %w", err)
	}
	return s.migrate(ctx, s.tmpl)
}

// migrate applies the migrations to database name and, with --pg-stats,
// creates the pg_stat_statements extension there.
func (s *Server) migrate(ctx context.Context, name string) error {
	pool, err := s.pool(ctx, name, 2)
	if err != nil {
		return err
	}
	defer pool.Close()
	m, err := migrations.New(pool, nil)
	if err != nil {
		return err
	}
	defer m.Close()
	if _, err := m.Up(ctx); err != nil {
		return err
	}
	if s.flags.PGStats {
		if _, err := pool.Exec(ctx, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements"); err != nil {
			return fmt.Errorf("--pg-stats: %w", err)
		}
	}
	return nil
}

// pool opens a connection pool to database name on the server.
func (s *Server) pool(ctx context.Context, name string, maxConns int32) (*pgxpool.Pool, error) {
	return pgxpool.NewWithConfig(ctx, s.poolConfig(name, maxConns, ""))
}

// poolConfig is the configuration of a pool to database name; a non-empty
// app becomes its application_name, by which the connection sampler counts
// the workers' connections.
func (s *Server) poolConfig(name string, maxConns int32, app string) *pgxpool.Config {
	cfg := s.base.Copy()
	cfg.ConnConfig.Database = name
	cfg.MaxConns = maxConns
	cfg.MinConns = 0
	if app != "" {
		cfg.ConnConfig.RuntimeParams["application_name"] = app
	}
	return cfg
}

// url returns a connection string to database name for another process,
// with application_name app: the --database-url with its database
// replaced, or for the embedded cluster a URL built from the connection
// settings (it carries the password: pass it in the environment, never on
// a command line).
func (s *Server) url(name, app string) (string, error) {
	raw := s.flags.DatabaseURL
	switch {
	case raw == "":
		c := s.base.ConnConfig
		u := url.URL{Scheme: "postgres", User: url.UserPassword(c.User, c.Password),
			Host: net.JoinHostPort(c.Host, strconv.Itoa(int(c.Port))), Path: "/" + name}
		q := url.Values{"application_name": {app}}
		if c.TLSConfig == nil {
			q.Set("sslmode", "disable")
		}
		u.RawQuery = q.Encode()
		return u.String(), nil
	case strings.HasPrefix(raw, "postgres://") || strings.HasPrefix(raw, "postgresql://"):
		u, err := url.Parse(raw)
		if err != nil { // url.Error quotes the URL, password included
			return "", errors.New("--database-url is not a valid URL")
		}
		u.Path = "/" + name
		q := u.Query()
		q.Set("application_name", app)
		u.RawQuery = q.Encode()
		return u.String(), nil
	}
	// keyword=value form: later settings override earlier ones.
	return raw + " dbname=" + quoteLiteral(name) + " application_name=" + quoteLiteral(app), nil
}

// RunDB is the fresh database of one run.
type RunDB struct {
	s    *Server
	name string
	temp bool // created for the run: drop it after
}

// truncated are the tables --reset=truncate empties before every run
// (approvals and waits: their foreign keys refuse tasks truncated alone).
const truncated = "tasks, task_attempts, ledger, approvals, waits, waits_replaced, signals"

// Fresh returns an empty, migrated, vacuumed database for one run.
func (s *Server) Fresh(ctx context.Context) (*RunDB, error) {
	if s.flags.Reset == "template" {
		s.runs++
		name := fmt.Sprintf("%s_run%d", s.prefix, s.runs)
		if _, err := s.admin.Exec(ctx, "CREATE DATABASE "+ident(name)+" TEMPLATE "+ident(s.tmpl)); err != nil {
			return nil, fmt.Errorf("creating run database: %w", err)
		}
		return &RunDB{s: s, name: name, temp: true}, nil
	}
	r := &RunDB{s: s, name: s.base.ConnConfig.Database}
	pool, err := r.Pool(ctx, 1)
	if err != nil {
		return nil, err
	}
	defer pool.Close()
	if _, err := pool.Exec(ctx, "TRUNCATE "+truncated+" RESTART IDENTITY"); err != nil {
		return nil, fmt.Errorf("emptying the tasks: %w", err)
	}
	if err := r.Settle(ctx, pool); err != nil {
		return nil, err
	}
	return r, nil
}

// FreshControl is Fresh with a small control pool on the run's database,
// for what the benchmark itself reads and writes.
func (s *Server) FreshControl(ctx context.Context) (*RunDB, *pgxpool.Pool, error) {
	rdb, err := s.Fresh(ctx)
	if err != nil {
		return nil, nil, err
	}
	ctl, err := rdb.Pool(ctx, 2)
	if err != nil {
		rdb.Close()
		return nil, nil, err
	}
	return rdb, ctl, nil
}

// Pool opens a connection pool to the run's database.
func (r *RunDB) Pool(ctx context.Context, maxConns int32) (*pgxpool.Pool, error) {
	return r.s.pool(ctx, r.name, maxConns)
}

// WorkerApp is the application_name of the connections of the workers under
// test (pools, worker processes, River clients): the connection sampler
// counts those.
const WorkerApp = "agentbench-worker"

// WorkerPool opens a connection pool for workers under test: its
// connections are named WorkerApp.
func (r *RunDB) WorkerPool(ctx context.Context, maxConns int32) (*pgxpool.Pool, error) {
	return pgxpool.NewWithConfig(ctx, r.s.poolConfig(r.name, maxConns, WorkerApp))
}

// DaemonPool opens a connection pool for agentledger's workers under test:
// named WorkerApp, with the session settings agentd's connections have
// (package pgplan). River's clients get plain WorkerPools.
func (r *RunDB) DaemonPool(ctx context.Context, maxConns int32) (*pgxpool.Pool, error) {
	cfg := r.s.poolConfig(r.name, maxConns, WorkerApp)
	for k, v := range pgplan.Settings {
		cfg.ConnConfig.RuntimeParams[k] = v
	}
	return pgxpool.NewWithConfig(ctx, cfg)
}

// URL returns a connection string to the run's database for a worker
// process (see Server.url).
func (r *RunDB) URL() (string, error) { return r.s.url(r.name, WorkerApp) }

// Name is the run database's name.
func (r *RunDB) Name() string { return r.name }

// Settle runs VACUUM ANALYZE on the queue tables (or the given tables) and a
// CHECKPOINT (when the role may), so that every run starts from the same
// state and no checkpoint of an earlier run's writes falls into the
// measurement.
func (r *RunDB) Settle(ctx context.Context, pool *pgxpool.Pool, tables ...string) error {
	if len(tables) == 0 {
		tables = []string{"tasks", "task_attempts"}
	}
	for _, t := range tables {
		q := "VACUUM ANALYZE " + t
		if _, err := pool.Exec(ctx, q); err != nil {
			return fmt.Errorf("%s: %w", q, err)
		}
	}
	_, _ = pool.Exec(ctx, "CHECKPOINT") // needs superuser or pg_checkpoint; best effort
	return nil
}

// Close drops the run's database if it was created for the run.
func (r *RunDB) Close() {
	if !r.temp {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, _ = r.s.admin.Exec(ctx, "DROP DATABASE IF EXISTS "+ident(r.name)+" WITH (FORCE)")
}

func ident(name string) string { return pgx.Identifier{name}.Sanitize() }

func quoteLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
