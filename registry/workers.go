package registry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
)

// How the worker registry ages. A pool refreshes its registration every
// 10 s while it runs and removes it when it stops; a registration that is
// no longer refreshed belongs to a pool that crashed or lost the database.
const (
	// LiveWithin is how recently a pool must have announced itself to be
	// live: the submit check counts only live pools, and agentctl workers
	// calls the others stale by default.
	LiveWithin = time.Minute
	// PruneAfter is how long a registration that is no longer refreshed is
	// kept (listed as stale): every pool's announcement deletes the older
	// ones, and Workers no longer lists them.
	PruneAfter = 5 * time.Minute
)

// Worker is one worker pool: announced, holding leases, or both.
type Worker struct {
	ID    string
	Tasks int64
	// LastHeartbeat is its latest sign of life: its announcement, or a
	// renewal or claim of one of its leases.
	LastHeartbeat time.Time
	// NextExpiry is when its first lease runs out unless renewed; zero
	// without leases.
	NextExpiry time.Time
	// Expired counts its leases that ran out: a worker that died or
	// stalled; the tasks are claimed again.
	Expired int64
	// StartedAt, Host and Queues are what it announced; StartedAt is zero
	// for a lease holder that did not announce itself (an older version).
	StartedAt time.Time
	Host      string
	Queues    []string
	// MCPServers are the states of the MCP servers its daemon is
	// configured with, as last announced.
	MCPServers map[string]string
	// Kinds are the task kinds it serves, as announced.
	Kinds []string
	// Tools are the tools its steps and agent tasks may call, as
	// announced; empty when it did not announce them (an older version).
	Tools []string
	// ToolClasses are the effect classes of those of its tools whose class
	// does not depend on their arguments, as announced.
	ToolClasses map[string]string
	// Caps are what it can run beyond its kinds (see CapTool), as
	// announced; nil when it did not announce them (an older version,
	// which claims any task of its kinds).
	Caps []string
	// Live says it announced itself within LiveWithin: it counts for the
	// submit check. A worker known only by its leases is not live.
	Live bool
	// PruneAt is when its registration is pruned unless it is refreshed
	// (PruneAfter after its last announcement); zero when it did not
	// announce itself.
	PruneAt time.Time
}

// Workers lists the worker pools that announced themselves within
// PruneAfter and those holding leases now.
func (s *Store) Workers(ctx context.Context) ([]Worker, error) {
	rows, err := s.db.Query(ctx, workersSQL, s.Now.Param(), LiveWithin, PruneAfter)
	if err != nil {
		return nil, fmt.Errorf("workers: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Worker, error) {
		var w Worker
		var next, started, prune *time.Time
		err := r.Scan(&w.ID, &w.Tasks, &w.LastHeartbeat, &next, &w.Expired, &started, &w.Host, &w.Queues, &w.MCPServers,
			&w.Kinds, &w.Tools, &w.Caps, &w.Live, &prune)
		if next != nil {
			w.NextExpiry = *next
		}
		if started != nil {
			w.StartedAt = *started
		}
		if prune != nil {
			w.PruneAt = *prune
		}
		return w, err
	})
	if err != nil {
		return nil, fmt.Errorf("workers: %w", err)
	}
	return out, nil
}

// LiveWorkers lists the live worker pools (announced within LiveWithin)
// with what they announced; Tasks, NextExpiry and Expired are not read.
// It is one look-up in the small workers table, cheap enough for every
// submission.
func (s *Store) LiveWorkers(ctx context.Context) ([]Worker, error) {
	rows, err := s.db.Query(ctx, liveWorkersSQL, s.Now.Param(), LiveWithin)
	if err != nil {
		return nil, fmt.Errorf("live workers: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Worker, error) {
		w := Worker{Live: true}
		err := r.Scan(&w.ID, &w.Host, &w.StartedAt, &w.LastHeartbeat, &w.Queues, &w.Kinds, &w.Tools, &w.MCPServers, &w.ToolClasses, &w.Caps)
		w.PruneAt = w.LastHeartbeat.Add(PruneAfter)
		return w, err
	})
	if err != nil {
		return nil, fmt.Errorf("live workers: %w", err)
	}
	return out, nil
}

// Registration is what a worker pool announces about itself.
type Registration struct {
	ID   string
	Host string
	PID  int
	// Queues and Kinds are what it claims.
	Queues, Kinds []string
	// Tools are the tools its steps and agent tasks may call, with their
	// parameter schemas (nil: not known) by name; nil when unknown (not
	// checked at submit).
	Tools map[string]json.RawMessage
	// Classes are the effect classes of those tools whose class does not
	// depend on their arguments (tools.Registry.Classes).
	Classes map[string]string
	// KindSchemas are the payload schemas of its typed kinds by name: a
	// submission of one of them to one of its queues must fit (KindSchemas).
	KindSchemas map[string]json.RawMessage
	// MCPServers are its daemon's MCP servers' states by name.
	MCPServers map[string]string
	// Caps are what it can run beyond its kinds (CapTool, CapMCP,
	// CapOrigin, CapModel): what its claims match tasks' needs against.
	// Nil when unknown (a pool that claims any task).
	Caps []string
}

// Register registers a worker pool (or refreshes its registration), so
// that Workers lists it even while it holds no lease and the submit check
// knows what it serves; in the same statement it prunes the registrations
// not refreshed for PruneAfter.
func (s *Store) Register(ctx context.Context, r Registration) error {
	var servers any // NULL without servers
	if len(r.MCPServers) > 0 {
		servers = r.MCPServers
	}
	var names []string // NULL when unknown
	schemas := map[string]json.RawMessage{}
	for name, schema := range r.Tools {
		names = append(names, name)
		if json.Valid(schema) {
			schemas[name] = schema
		}
	}
	slices.Sort(names)
	var toolSchemas any // NULL without schemas
	if len(schemas) > 0 {
		toolSchemas = schemas
	}
	var classes any // NULL without classes
	if len(r.Classes) > 0 {
		classes = r.Classes
	}
	var kindSchemas any // NULL without typed kinds
	if len(r.KindSchemas) > 0 {
		kindSchemas = r.KindSchemas
	}
	if _, err := s.db.Exec(ctx, registerSQL, r.ID, r.Host, r.PID, r.Queues, r.Kinds, servers, names,
		s.Now.Param(), PruneAfter, toolSchemas, classes, r.Caps, kindSchemas); err != nil {
		return fmt.Errorf("announce worker: %w", err)
	}
	return nil
}

// Registration reads who last announced worker id: its host and process
// id, and how long ago; ok is false when none is registered.
func (s *Store) Registration(ctx context.Context, id string) (host string, pid int, ago time.Duration, ok bool, err error) {
	err = s.db.QueryRow(ctx, registrationSQL, id, s.Now.Param()).Scan(&host, &pid, &ago)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", 0, 0, false, nil
	}
	if err != nil {
		return "", 0, 0, false, fmt.Errorf("worker %s: %w", id, err)
	}
	return host, pid, ago, true, nil
}

// Announce registers worker id (or refreshes its registration) without
// its tools: Register with the rest of a Registration.
func (s *Store) Announce(ctx context.Context, id, host string, pid int, queues, kinds []string, mcp map[string]string) error {
	return s.Register(ctx, Registration{ID: id, Host: host, PID: pid, Queues: queues, Kinds: kinds, MCPServers: mcp})
}

// ToolSchemas returns the parameter schemas the worker pools workers
// announced for the tools named, by pool and tool; a pool that announced
// none of them (or no schemas: an older version) is missing. It reads
// only those schemas, for every submission of a steps task.
func (s *Store) ToolSchemas(ctx context.Context, workers, tools []string) (map[string]map[string]json.RawMessage, error) {
	rows, err := s.db.Query(ctx, toolSchemasSQL, workers, tools)
	if err != nil {
		return nil, fmt.Errorf("tool schemas: %w", err)
	}
	out := map[string]map[string]json.RawMessage{}
	var worker, tool string
	var schema json.RawMessage
	_, err = pgx.ForEachRow(rows, []any{&worker, &tool, &schema}, func() error {
		if out[worker] == nil {
			out[worker] = map[string]json.RawMessage{}
		}
		out[worker][tool] = slices.Clone(schema)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("tool schemas: %w", err)
	}
	return out, nil
}

// Retire removes worker id's registration.
func (s *Store) Retire(ctx context.Context, id string) error {
	if _, err := s.db.Exec(ctx, retireSQL, id); err != nil {
		return fmt.Errorf("retire worker: %w", err)
	}
	return nil
}
