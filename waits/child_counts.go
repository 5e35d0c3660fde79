package waits

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// ChildCount is how many children a children wait waits for, and how many
// of them ended.
type ChildCount struct {
	Children, Ended int
}

// childCountsSQL counts the children each children wait of $1 waits for
// (those its spec lists, or every child of its task's generation), and
// how many of them ended, as the wait itself decides it; a wait a replay
// replaced (waits_replaced) too.
const childCountsSQL = `/* waits.child_counts */
SELECT w.id, count(t.id), count(t.id) FILTER (WHERE t.state IN ('succeeded', 'dead', 'cancelled', 'compensated'))
FROM (
	SELECT id, task_id, generation, kind, spec FROM waits WHERE id = ANY ($1)
	UNION ALL
	SELECT id, task_id, generation, kind, spec FROM waits_replaced WHERE id = ANY ($1)
) w JOIN tasks t ON t.parent_id = w.task_id AND t.parent_generation = w.generation
	AND (jsonb_array_length(coalesce(w.spec -> 'tasks', '[]')) = 0
		OR t.id IN (SELECT jsonb_array_elements_text(w.spec -> 'tasks')::bigint))
WHERE w.kind = 'children'
GROUP BY w.id`

// ChildCounts counts the children of ws's children waits, by wait id; a
// wait whose task has started none yet is absent.
func (s *Store) ChildCounts(ctx context.Context, ws []Wait) (map[int64]ChildCount, error) {
	var ids []int64
	for _, w := range ws {
		if w.Kind == KindChildren {
			ids = append(ids, w.ID)
		}
	}
	out := map[int64]ChildCount{}
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := s.db.Query(ctx, childCountsSQL, ids)
	if err != nil {
		return nil, fmt.Errorf("counting the children of waits: %w", err)
	}
	var id, n, ended int64
	_, err = pgx.ForEachRow(rows, []any{&id, &n, &ended}, func() error {
		out[id] = ChildCount{Children: int(n), Ended: int(ended)}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("counting the children of waits: %w", err)
	}
	return out, nil
}
