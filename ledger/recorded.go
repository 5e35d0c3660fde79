package ledger

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// recordedSQL reads whether an effect's row is finished.
const recordedSQL = `/* ledger.recorded */ SELECT state IN ('completed', 'failed')
FROM ledger WHERE tenant = $1 AND operation = $2 AND effect_key = $3`

// Recorded reports whether Do of e for a would be served from the ledger
// (its row is finished: completed or failed) and perform nothing. An
// interceptor that asks a person before an effect reads it, so that a
// replay is not asked again. It reads without the fence: Do decides again
// under it.
func (l *Ledger) Recorded(ctx context.Context, a Attempt, e Effect) (bool, error) {
	var done bool
	err := l.db.QueryRow(ctx, recordedSQL, a.Tenant, e.Operation,
		EffectKey(a.Tenant, a.TaskID, a.Generation, e.StepPath, e.Operation)).Scan(&done)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("ledger: reading whether %s is recorded: %w", e.StepPath, err)
	}
	return done, nil
}
