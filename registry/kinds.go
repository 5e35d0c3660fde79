package registry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
)

// PublishKinds records the payload schemas of the typed kinds a daemon
// (worker) serves, replacing earlier ones of the same names.
func (s *Store) PublishKinds(ctx context.Context, worker string, schemas map[string]json.RawMessage) error {
	names := make([]string, 0, len(schemas))
	docs := make([]string, 0, len(schemas))
	for name, schema := range schemas {
		names = append(names, name)
		docs = append(docs, string(schema))
	}
	if len(names) == 0 {
		return nil
	}
	if _, err := s.db.Exec(ctx, publishKindsSQL, names, docs, worker); err != nil {
		return fmt.Errorf("publish kinds: %w", err)
	}
	return nil
}

// Published is a payload schema of a typed kind, with the pool that
// announced it (or last published it to kinds).
type Published struct {
	Schema json.RawMessage
	By     string
	// Live says a live pool announced it; else it was published last by
	// a pool that is not live now.
	Live bool
}

// KindSchemas returns the payload schemas of kind that the live pools
// claiming it from queue announced, each distinct one once: a task of it
// there may go to any of them, so its payload must fit each. Without a
// live pool announcing one (a submission queued for a pool not up yet, or
// restarting): the schema of the pool last seen claiming it from queue,
// else the one last published for kind (kinds), from whatever queue.
func (s *Store) KindSchemas(ctx context.Context, kind, queue string) ([]Published, error) {
	rows, err := s.db.Query(ctx, kindSchemasSQL, kind, queue, s.Now.Param(), LiveWithin)
	if err != nil {
		return nil, fmt.Errorf("kind %q: %w", kind, err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Published, error) {
		var p Published
		err := row.Scan(&p.Schema, &p.By, &p.Live)
		return p, err
	})
	if err != nil {
		return nil, fmt.Errorf("kind %q: %w", kind, err)
	}
	slices.SortFunc(out, func(a, b Published) int { return strings.Compare(a.By, b.By) })
	return out, nil
}

// KindConflict is a live pool that claims a typed kind from a queue pool
// also claims, with another payload schema.
type KindConflict struct {
	Kind, Worker string
	Queues       []string
}

// KindConflicts lists the live pools whose payload schema of a typed kind
// worker announced differs from worker's, where both claim it from the
// same queues: a submission there must fit both.
func (s *Store) KindConflicts(ctx context.Context, worker string) ([]KindConflict, error) {
	rows, err := s.db.Query(ctx, kindConflictsSQL, worker, s.Now.Param(), LiveWithin)
	if err != nil {
		return nil, fmt.Errorf("kind schemas of other workers: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (KindConflict, error) {
		var c KindConflict
		err := row.Scan(&c.Kind, &c.Worker, &c.Queues)
		return c, err
	})
	if err != nil {
		return nil, fmt.Errorf("kind schemas of other workers: %w", err)
	}
	return out, nil
}

// KindSchema returns the payload schema last published for kind, if any.
func (s *Store) KindSchema(ctx context.Context, kind string) (json.RawMessage, bool, error) {
	var schema []byte
	err := s.db.QueryRow(ctx, kindSchemaSQL, kind).Scan(&schema)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("kind %q: %w", kind, err)
	}
	return schema, true, nil
}
