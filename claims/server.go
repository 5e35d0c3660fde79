package claims

import (
	"context"
	"errors"
	"fmt"
)

// CheckServer tells whether the server has what the claim statements use
// beyond plain SQL: currtid2(text, tid), by which a claim passes over rows
// leased since its snapshot (settled, in queries.go). PostgreSQL 15 has
// it; it is a server function kept for ODBC drivers, so a server without
// it would fail every crowd claim at its first call.
func CheckServer(ctx context.Context, db DB) error {
	var ok bool
	if err := db.QueryRow(ctx, `SELECT to_regprocedure('currtid2(text, tid)') IS NOT NULL`).Scan(&ok); err != nil {
		return fmt.Errorf("checking the server's functions: %w", err)
	}
	if !ok {
		return errors.New("this PostgreSQL server has no function currtid2(text, tid), which the claims use to tell a row's latest version (agentledger is built and tested on PostgreSQL 15, which has it)")
	}
	return nil
}
