package ledger

import (
	"context"
	"fmt"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/internal/pgplan"
)

// minPrefix is the shortest key prefix Find takes: ledger_key_prefix_idx
// (migration 00018) indexes the keys' first 6 characters, so that a prefix
// of any length at least that is one equality look-up.
const minPrefix = 6

// FindParams select effects for Find; empty fields match any. At least one
// of Key, TaskID and Operation is required.
type FindParams struct {
	// Key is an effect key or a prefix of one (as journals show them).
	Key       string
	TaskID    int64
	Operation string
	Tenant    string
	Limit     int // default 50, at most 1000
	// Before pages on: only effects recorded before the one of this
	// sequence number (Found.Seq of a page's last), 0 from the newest.
	Before int64
}

// Found is an effect with the task generation it belongs to.
type Found struct {
	Entry
	TaskID     int64
	Generation int32
	// Seq orders the ledger: newer effects have higher ones (Before).
	Seq int64
}

// Find looks effects up for operators, newest first.
func (l *Ledger) Find(ctx context.Context, p FindParams) ([]Found, error) {
	switch {
	case p.Key == "" && p.TaskID == 0 && p.Operation == "":
		return nil, agentledger.Invalid("key", "give a key (or its prefix), a task or an operation")
	case p.Key != "" && utf8.RuneCountInString(p.Key) < minPrefix:
		return nil, agentledger.Invalid("key", "%q is too short a prefix: give at least %d characters", p.Key, minPrefix)
	case p.Limit > 1000:
		return nil, agentledger.Invalid("limit", "%d is above 1000", p.Limit)
	case p.Before < 0:
		return nil, agentledger.Invalid("before", "%d is not a sequence number", p.Before)
	case p.Limit <= 0:
		p.Limit = 50
	}
	var out []Found
	sql := findSQL
	if p.Key != "" {
		sql = findByKeySQL
	}
	// A key is found through its index; a search by operation or tenant
	// alone reads the table: let the planner scan it.
	err := pgplan.SeqScan(ctx, l.db, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, sql, p.Key, p.TaskID, p.Operation, p.Tenant, p.Limit, p.Before)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var f Found
			if err := scanEntry(rows, &f.Entry, &f.TaskID, &f.Generation, &f.Seq); err != nil {
				return err
			}
			out = append(out, f)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("ledger: find: %w", err)
	}
	return out, nil
}

// UnknownCount returns how many effects wait for an operator because their
// outcome is unknown (all tenants).
func (l *Ledger) UnknownCount(ctx context.Context) (int64, error) {
	var n int64
	// No index answers it: let the planner scan.
	err := pgplan.SeqScan(ctx, l.db, func(tx pgx.Tx) error {
		return tx.QueryRow(ctx, unknownCountSQL).Scan(&n)
	})
	if err != nil {
		return 0, fmt.Errorf("ledger: count unknown effects: %w", err)
	}
	return n, nil
}
