package registry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

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

// KindSchema returns the payload schema published for kind, if any.
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
